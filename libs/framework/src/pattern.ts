/**
 * Path patterns (see PathDeclaration.pattern): '/'-separated segments, each a literal, `:name` (one
 * non-empty segment not ending in '.') or `*name` (the non-empty rest of the path, no segment of it ending in '.';
 * only literal segments may follow it, as in `mounts/*path/tune`). A
 * trailing `?` on the last parameter makes it optional: the segment and its '/' may be absent. A
 * trailing '/' in a pattern is an empty literal segment, so `roles/` matches only "roles/".
 */

export type PatternSegment =
  | { kind: 'literal'; value: string }
  | { kind: 'param'; name: string }
  | { kind: 'rest'; name: string };

export interface CompiledPattern {
  readonly source: string;
  readonly segments: readonly PatternSegment[];
  /** Whether the last segment may be absent. */
  readonly optionalLast: boolean;
  readonly paramNames: readonly string[];
  /** Captured parameters, or null when the path does not match. */
  match(path: string): Record<string, string> | null;
  /** The concrete shapes the pattern covers: one, or two when the last parameter is optional. */
  readonly variants: readonly (readonly PatternSegment[])[];
}

const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function compilePattern(source: string): CompiledPattern {
  const raw = source === '' ? [] : source.split('/');
  const optionalLast = raw.length > 0 && /^[:*].*\?$/.test(raw[raw.length - 1]);
  const segments = raw.map((text, index) => parseSegment(source, text, index === raw.length - 1));
  const rest = segments.findIndex((segment) => segment.kind === 'rest');
  if (rest >= 0 && segments.slice(rest + 1).some((segment) => segment.kind !== 'literal')) {
    throw new Error(`pattern "${source}": only literal segments may follow a "*" parameter`);
  }
  const paramNames = segments.flatMap((segment) => (segment.kind === 'literal' ? [] : [segment.name]));
  if (new Set(paramNames).size !== paramNames.length) throw new Error(`pattern "${source}" repeats a parameter name`);
  return {
    source,
    segments,
    optionalLast,
    paramNames,
    match: (path) => matchSegments(segments, optionalLast, path),
    variants: optionalLast ? [segments.slice(0, -1), segments] : [segments],
  };
}

function parseSegment(source: string, text: string, last: boolean): PatternSegment {
  const sigil = text[0];
  if (sigil !== ':' && sigil !== '*') {
    if (/[:*?]/.test(text)) throw new Error(`pattern "${source}": segment "${text}" mixes literal text and parameters`);
    return { kind: 'literal', value: text };
  }
  const name = text.slice(1).replace(/\?$/, '');
  if (!PARAM_NAME.test(name)) throw new Error(`pattern "${source}": invalid parameter "${text}"`);
  if (!last && text.endsWith('?')) {
    throw new Error(`pattern "${source}": "${text}" is allowed only as the last segment`);
  }
  return { kind: sigil === '*' ? 'rest' : 'param', name };
}

function matchSegments(
  segments: readonly PatternSegment[],
  optionalLast: boolean,
  path: string,
): Record<string, string> | null {
  const parts = path === '' ? [] : path.split('/');
  const params: Record<string, string> = {};
  for (const [index, segment] of segments.entries()) {
    if (index >= parts.length) {
      return optionalLast && index === segments.length - 1 ? params : null;
    }
    const part = parts[index];
    switch (segment.kind) {
      case 'literal':
        if (part !== segment.value) return null;
        break;
      case 'param':
        // Vault's names never end in '.', so "keys/foo." is an unsupported path (404).
        if (part === '' || part.endsWith('.')) return null;
        params[segment.name] = part;
        break;
      case 'rest': {
        // The rest takes everything but the literal suffix, e.g. `mounts/*path/tune`.
        const suffix = segments.slice(index + 1) as { kind: 'literal'; value: string }[];
        const end = parts.length - suffix.length;
        if (end <= index || suffix.some((literal, k) => parts[end + k] !== literal.value)) return null;
        const value = parts.slice(index, end).join('/');
        // "." and ".." reach the handler, which names the problem (400); "name." is a 404.
        if (value === '' || parts.slice(index, end).some((part) => part.endsWith('.') && part !== '.' && part !== '..')) return null;
        params[segment.name] = value;
        return params;
      }
    }
  }
  return parts.length === segments.length ? params : null;
}

function templateSegment(segment: PatternSegment): string {
  return segment.kind === 'literal' ? segment.value : `{${segment.name}}`;
}

/** OpenAPI path templates of a pattern: `keys/:name` -> ["/keys/{name}"]; an optional parameter gives two. */
export function openApiTemplates(pattern: string | CompiledPattern): string[] {
  const compiled = typeof pattern === 'string' ? compilePattern(pattern) : pattern;
  return compiled.variants.map((variant) => `/${variant.map(templateSegment).join('/')}`);
}

export interface RelativeTemplate {
  /** Template relative to the queried path, starting with '/'. */
  path: string;
  /** Parameters fixed by the queried path (they no longer appear in `path`). */
  bound: string[];
}

/**
 * Places a pattern variant relative to a queried path: null when the variant is neither at nor below
 * it. Concrete values in the queried path fill parameters, so querying "keys/" relative to
 * `keys/:name` gives "/{name}" and querying "keys/foo" gives "/" with `name` bound.
 */
export function relativeTemplate(variant: readonly PatternSegment[], queriedPath: string): RelativeTemplate | null {
  const trimmed = queriedPath.replace(/^\/+|\/+$/g, '');
  const queried = trimmed === '' ? [] : trimmed.split('/');
  const bound: string[] = [];
  for (const [index, part] of queried.entries()) {
    const segment = variant[index];
    if (segment === undefined) return null;
    if (segment.kind === 'literal' && segment.value !== part) return null;
    if (segment.kind !== 'literal') {
      if (part === '') return null;
      bound.push(segment.name);
      if (segment.kind === 'rest') return { path: `/${variant.slice(index + 1).map(templateSegment).join('/')}`, bound };
    }
  }
  return { path: `/${variant.slice(queried.length).map(templateSegment).join('/')}`, bound };
}
