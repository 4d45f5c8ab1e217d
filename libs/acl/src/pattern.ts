/**
 * Policy path patterns, as Vault reads them: an exact path; a trailing `*` making the rest a prefix
 * glob; and `+` segments each matching exactly one path segment (combinable with a trailing `*`).
 * A `*` anywhere but at the end is an ordinary character, as in Vault.
 */
export type PatternKind = 'exact' | 'prefix' | 'segments';

export interface CompiledPattern {
  /** The pattern as written, minus a leading '/'. */
  text: string;
  kind: PatternKind;
  /** The text without its trailing `*` (the whole text for exact patterns). */
  stem: string;
  /** `stem` split on '/' (segment patterns only; `+` marks a wildcard segment). */
  segments: readonly string[];
  isGlob: boolean;
  /** Index of the first `+` segment or of the trailing `*`; the text length when there is neither. */
  firstWildcard: number;
  wildcardSegments: number;
}

/** Why the pattern cannot be used, or undefined when it is valid. */
export function patternProblem(pattern: string): string | undefined {
  if (withoutLeadingSlash(pattern) === '') return 'the path pattern is empty';
  if (pattern.includes('+*')) return "invalid use of wildcards: '+*' is not allowed";
  return undefined;
}

/** Compiles a pattern already checked with `patternProblem`. */
export function compilePattern(pattern: string): CompiledPattern {
  const text = withoutLeadingSlash(pattern);
  const isGlob = text.endsWith('*');
  const stem = isGlob ? text.slice(0, -1) : text;
  const parts = stem.split('/');
  const wildcardSegments = parts.filter((part) => part === '+').length;
  const kind: PatternKind = wildcardSegments > 0 ? 'segments' : isGlob ? 'prefix' : 'exact';
  return {
    text,
    kind,
    stem,
    segments: kind === 'segments' ? parts : [],
    isGlob,
    firstWildcard: wildcardSegments > 0 ? firstWildcardSegmentIndex(parts) : stem.length,
    wildcardSegments,
  };
}

export function withoutLeadingSlash(path: string): string {
  return path.startsWith('/') ? path.slice(1) : path;
}

/** Character index of the first `+` segment. */
function firstWildcardSegmentIndex(parts: readonly string[]): number {
  let index = 0;
  for (const part of parts) {
    if (part === '+') return index;
    index += part.length + 1;
  }
  return index;
}

/** Whether a segment pattern matches the path, given the path already split on '/'. */
export function segmentsMatch(pattern: CompiledPattern, pathParts: readonly string[]): boolean {
  const { segments, isGlob } = pattern;
  if (pathParts.length < segments.length) return false;
  if (!isGlob && pathParts.length !== segments.length) return false;
  const last = segments.length - 1;
  for (let i = 0; i <= last; i++) {
    const expected = segments[i];
    if (expected === '+') continue;
    // The glob's final segment is a prefix of the path's segment; later segments are free.
    if (isGlob && i === last) return pathParts[i].startsWith(expected);
    if (expected !== pathParts[i]) return false;
  }
  return true;
}

/**
 * Orders two patterns that both match a path, as Vault documents; positive when `a` wins. The lower
 * priority one is the one whose first wildcard comes earlier, else the one ending in `*`, else the
 * one with more `+` segments, else the shorter, else the lexicographically smaller.
 */
export function comparePriority(a: CompiledPattern, b: CompiledPattern): number {
  if (a.firstWildcard !== b.firstWildcard) return a.firstWildcard - b.firstWildcard;
  if (a.isGlob !== b.isGlob) return a.isGlob ? -1 : 1;
  if (a.wildcardSegments !== b.wildcardSegments) return b.wildcardSegments - a.wildcardSegments;
  if (a.stem.length !== b.stem.length) return a.stem.length - b.stem.length;
  return a.stem < b.stem ? -1 : a.stem > b.stem ? 1 : 0;
}
