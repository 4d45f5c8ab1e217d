import { parseDuration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { compilePattern, patternProblem } from './pattern';
import { objectsOf, type PolicySource, type RawObject } from './source';
import type { ParameterConstraints, PathRule, PolicyCapability } from './types';

const TOP_LEVEL_KEYS = new Set(['path', 'name']);
const PATH_KEYS = new Set([
  'capabilities',
  'policy',
  'allowed_parameters',
  'denied_parameters',
  'required_parameters',
  'min_wrapping_ttl',
  'max_wrapping_ttl',
  'comment',
]);
const GRANTABLE = new Set<string>(['create', 'read', 'update', 'patch', 'delete', 'list', 'sudo', 'deny']);
/** Vault capabilities for features this service does not have: accepted, grant nothing. */
const KNOWN_UNUSED = new Set(['subscribe', 'recover']);
/** The pre-capabilities `policy = "..."` form, mapped as Vault maps it. */
const LEGACY_POLICIES: Record<string, readonly PolicyCapability[]> = {
  deny: ['deny'],
  read: ['read', 'list'],
  write: ['create', 'read', 'update', 'delete', 'list'],
  sudo: ['create', 'read', 'update', 'delete', 'list', 'sudo'],
};

type Report = (message: string) => void;

/**
 * The path rules of a policy document in file order. Throws a 400 listing every problem found;
 * each names the policy, the path pattern and, for HCL, the block's line.
 */
export function readPathRules(label: string, source: PolicySource): PathRule[] {
  // Every problem is collected so that one 400 reports them all.
  const problems: string[] = [];
  const report: Report = (message) => problems.push(message);
  for (const key of Object.keys(source.root)) {
    if (!TOP_LEVEL_KEYS.has(key)) report(`${label}: unknown key "${key}" (expected path blocks)`);
  }
  const rules: PathRule[] = [];
  const seen = new Map<string, number>();
  for (const { pattern, body } of pathBlocks(label, source.root.path, report)) {
    const occurrence = seen.get(pattern) ?? 0;
    seen.set(pattern, occurrence + 1);
    const line = source.blockLine(pattern, occurrence);
    const where = `${label}, path ${JSON.stringify(pattern)}${line === undefined ? '' : ` (line ${line})`}`;
    const rule = readRule(pattern, body);
    if (Array.isArray(rule)) rule.forEach((message) => report(`${where}: ${message}`));
    else rules.push(rule);
  }
  if (problems.length > 0) throw new ServiceError('bad-request', problems);
  return rules;
}

function pathBlocks(label: string, value: unknown, report: Report): Array<{ pattern: string; body: RawObject }> {
  if (value === undefined) return [];
  const blockShape = 'must be a block such as path "PATTERN" { capabilities = [...] }';
  const groups = objectsOf(value);
  if (!groups) {
    report(`${label}: path ${blockShape}`);
    return [];
  }
  return groups.flatMap((group) =>
    Object.entries(group).flatMap(([pattern, bodies]) => {
      const found = objectsOf(bodies);
      if (found) return found.map((body) => ({ pattern, body }));
      report(`${label}: path ${JSON.stringify(pattern)} ${blockShape}`);
      return [];
    }),
  );
}

/** The rule a block describes, or the problems that stop it from being one. */
function readRule(written: string, body: RawObject): PathRule | string[] {
  const problems: string[] = [];
  const report: Report = (message) => problems.push(message);
  const invalidPattern = patternProblem(written);
  if (invalidPattern) report(invalidPattern);
  for (const key of Object.keys(body)) {
    if (!PATH_KEYS.has(key)) report(`unknown key "${key}"`);
  }
  const minWrappingTtl = readTtl(body, 'min_wrapping_ttl', report);
  const maxWrappingTtl = readTtl(body, 'max_wrapping_ttl', report);
  if (minWrappingTtl > 0 && maxWrappingTtl > 0 && maxWrappingTtl < minWrappingTtl) {
    report('max_wrapping_ttl cannot be less than min_wrapping_ttl');
  }
  const rule: PathRule = {
    pattern: compilePattern(written).text,
    capabilities: readCapabilities(body, report),
    allowedParameters: readConstraints(body, 'allowed_parameters', report),
    deniedParameters: readConstraints(body, 'denied_parameters', report),
    requiredParameters: readNames(body, 'required_parameters', report).map((name) => name.toLowerCase()),
    minWrappingTtl,
    maxWrappingTtl,
  };
  return problems.length > 0 ? problems : rule;
}

function readCapabilities(body: RawObject, report: Report): ReadonlySet<PolicyCapability> {
  const granted = new Set<PolicyCapability>();
  for (const name of readNames(body, 'capabilities', report)) {
    if (GRANTABLE.has(name)) granted.add(name as PolicyCapability);
    else if (!KNOWN_UNUSED.has(name)) report(`unknown capability ${JSON.stringify(name)}`);
  }
  const legacy = body.policy;
  if (legacy !== undefined) {
    const mapped = typeof legacy === 'string' ? LEGACY_POLICIES[legacy] : undefined;
    if (mapped) mapped.forEach((capability) => granted.add(capability));
    else report(`policy must be one of "deny", "read", "write", "sudo"`);
  }
  // `deny` erases everything else written beside it.
  return granted.has('deny') ? new Set(['deny']) : granted;
}

function readNames(body: RawObject, key: string, report: Report): string[] {
  const value = body[key];
  if (value === undefined) return [];
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value;
  report(`${key} must be a list of strings`);
  return [];
}

function readConstraints(body: RawObject, key: string, report: Report): ParameterConstraints {
  const constraints = new Map<string, unknown[]>();
  const value = body[key];
  if (value === undefined) return constraints;
  const maps = objectsOf(value);
  if (!maps) {
    report(`${key} must be a map of parameter names to lists of values`);
    return constraints;
  }
  for (const [name, values] of maps.flatMap((map) => Object.entries(map))) {
    if (Array.isArray(values)) constraints.set(name.toLowerCase(), values);
    else report(`${key} ${JSON.stringify(name)} must be a list of values ([] for any value)`);
  }
  return constraints;
}

function readTtl(body: RawObject, key: string, report: Report): number {
  const value = body[key];
  if (value === undefined) return 0;
  try {
    return parseDuration(value);
  } catch {
    report(`${key} is not a valid duration (use seconds or a duration such as "90s", "15m", "1h")`);
    return 0;
  }
}
