import { mergePermissions } from './permissions';
import { compilePattern, comparePriority, segmentsMatch, withoutLeadingSlash, type CompiledPattern } from './pattern';
import type { PathRule, Policy } from './types';

interface WildcardRule {
  pattern: CompiledPattern;
  rule: PathRule;
}

/**
 * The merged rules of a set of policies, arranged for lookup on every request. With E exact, P
 * prefix and S segment-wildcard patterns, finding the governing rule of a path of length L costs:
 * one hash lookup (exact); at most one hash lookup per distinct prefix length, longest first
 * (so O(min(P, L)) lookups of O(L) each); and a scan of the segment rules in priority order
 * that stops at the first match (O(S × segments)), skipped when there are none.
 */
export class RuleIndex {
  private readonly exact = new Map<string, PathRule>();
  private readonly prefixes = new Map<string, WildcardRule>();
  /** Distinct prefix lengths, longest first. */
  private readonly prefixLengths: number[];
  /** Highest priority first, so the first match is the best segment rule. */
  private readonly segmentRules: WildcardRule[];

  constructor(policies: readonly Policy[]) {
    const segmentRules: WildcardRule[] = [];
    for (const rule of mergeByPattern(policies)) {
      const pattern = compilePattern(rule.pattern);
      if (pattern.kind === 'exact') this.exact.set(pattern.text, rule);
      else if (pattern.kind === 'prefix') this.prefixes.set(pattern.stem, { pattern, rule });
      else segmentRules.push({ pattern, rule });
    }
    this.prefixLengths = [...new Set([...this.prefixes.keys()].map((prefix) => prefix.length))].sort((a, b) => b - a);
    this.segmentRules = segmentRules.sort((a, b) => comparePriority(b.pattern, a.pattern));
  }

  /**
   * The rule that governs `path`: an exact pattern first, otherwise the highest-priority wildcard
   * pattern. `listing` also lets an exact pattern match the path without its trailing '/', as
   * Vault does for list requests.
   */
  lookup(requestPath: string, listing: boolean): PathRule | undefined {
    const path = withoutLeadingSlash(requestPath);
    const exact = this.exact.get(path) ?? (listing && path.endsWith('/') ? this.exact.get(path.slice(0, -1)) : undefined);
    if (exact) return exact;
    const prefix = this.longestPrefix(path);
    const segment = this.bestSegmentRule(path);
    if (!prefix || !segment) return (prefix ?? segment)?.rule;
    return comparePriority(prefix.pattern, segment.pattern) > 0 ? prefix.rule : segment.rule;
  }

  /**
   * Whether some rule grants a capability (not deny) on a path under `prefix`: a rule written
   * inside it, or a wildcard rule whose stem covers it.
   */
  grantsUnder(requestPrefix: string): boolean {
    const prefix = withoutLeadingSlash(requestPrefix);
    const granting = (rule: PathRule) => rule.capabilities.size > 0 && !rule.capabilities.has('deny');
    const covers = (stem: string) => stem.startsWith(prefix) || prefix.startsWith(stem);
    return (
      [...this.exact].some(([path, rule]) => path.startsWith(prefix) && granting(rule)) ||
      [...this.prefixes.values(), ...this.segmentRules].some(({ pattern, rule }) => covers(pattern.stem.split('+')[0]) && granting(rule))
    );
  }

  private longestPrefix(path: string): WildcardRule | undefined {
    for (const length of this.prefixLengths) {
      if (length > path.length) continue;
      const found = this.prefixes.get(path.slice(0, length));
      if (found) return found;
    }
    return undefined;
  }

  private bestSegmentRule(path: string): WildcardRule | undefined {
    if (this.segmentRules.length === 0) return undefined;
    const parts = path.split('/');
    return this.segmentRules.find(({ pattern }) => segmentsMatch(pattern, parts));
  }
}

/** One rule per pattern, merging every rule written for it across all the policies. */
function mergeByPattern(policies: readonly Policy[]): PathRule[] {
  const merged = new Map<string, PathRule>();
  for (const rule of policies.flatMap((policy) => policy.rules)) {
    const existing = merged.get(rule.pattern);
    merged.set(rule.pattern, existing ? { pattern: rule.pattern, ...mergePermissions(existing, rule) } : rule);
  }
  return [...merged.values()];
}
