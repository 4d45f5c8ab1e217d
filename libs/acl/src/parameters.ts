import { isDeepStrictEqual } from 'node:util';
import type { PathPermissions } from './types';

/**
 * Why the request data breaks the rule's parameter constraints, or undefined when it does not.
 * Vault's order: required parameters, then denied, then allowed. Names are matched
 * case-insensitively. The reason names the parameter and never its value.
 */
export function parameterViolation(rule: PathPermissions, data: Readonly<Record<string, unknown>>): string | undefined {
  const sent = new Map(Object.entries(data).map(([name, value]) => [name.toLowerCase(), { name, value }]));
  const missing = rule.requiredParameters.find((name) => !sent.has(name));
  if (missing !== undefined) return `missing required parameter "${missing}"`;
  if (sent.size === 0) return undefined;

  const { allowedParameters: allowed, deniedParameters: denied } = rule;
  if (denied.has('*')) {
    const [first] = sent.values();
    return `parameter "${first.name}" is denied: this path denies every parameter`;
  }
  for (const [key, { name, value }] of sent) {
    const deniedValues = denied.get(key);
    if (deniedValues && deniedMatch(value, deniedValues)) {
      return deniedValues.length === 0 ? `parameter "${name}" is denied` : `this value of parameter "${name}" is denied`;
    }
  }

  if (allowed.size === 0) return undefined;
  const anyName = allowed.has('*');
  for (const [key, { name, value }] of sent) {
    const allowedValues = allowed.get(key);
    if (!allowedValues) {
      if (anyName) continue;
      return `parameter "${name}" is not allowed`;
    }
    if (!allowedMatch(value, allowedValues)) return `this value of parameter "${name}" is not allowed`;
  }
  return undefined;
}

/** A list value is allowed as a whole, or when every element is (Vault 1.21 list handling). */
function allowedMatch(value: unknown, allowedValues: readonly unknown[]): boolean {
  if (allowedValues.length === 0 || inList(value, allowedValues)) return true;
  return Array.isArray(value) && value.length > 0 && value.every((element) => inList(element, allowedValues));
}

/** A list value is denied as a whole, or when any element is. */
function deniedMatch(value: unknown, deniedValues: readonly unknown[]): boolean {
  if (deniedValues.length === 0 || inList(value, deniedValues)) return true;
  return Array.isArray(value) && value.some((element) => inList(element, deniedValues));
}

function inList(value: unknown, list: readonly unknown[]): boolean {
  return list.some((item) =>
    typeof item === 'string' && typeof value === 'string' ? globMatch(item, value) : isDeepStrictEqual(item, value),
  );
}

/** Vault's value globbing: a leading and/or trailing `*` matches any suffix/prefix/substring. */
export function globMatch(item: string, value: string): boolean {
  if (item.length < 2) return item === value;
  const leading = item.startsWith('*');
  const trailing = item.endsWith('*');
  if (leading && trailing) return value.includes(item.slice(1, -1));
  if (leading) return value.endsWith(item.slice(1));
  if (trailing) return value.startsWith(item.slice(0, -1));
  return item === value;
}
