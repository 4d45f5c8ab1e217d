import type { ParameterConstraints, PathPermissions, PolicyCapability } from './types';

const DENY_ONLY: ReadonlySet<PolicyCapability> = new Set(['deny']);

/**
 * Combines two rules written for the same pattern (in one policy or several), as Vault does:
 * capabilities add up unless either side denies, in which case only `deny` remains; parameter maps
 * merge key by key (an empty value list, meaning any value, wins over a list); required parameters
 * add up; each wrapping TTL bound keeps the smaller non-zero value.
 */
export function mergePermissions(current: PathPermissions, added: PathPermissions): PathPermissions {
  if (current.capabilities.has('deny')) return current;
  if (added.capabilities.has('deny')) return denyOnly();
  return {
    capabilities: new Set([...current.capabilities, ...added.capabilities]),
    allowedParameters: mergeConstraints(current.allowedParameters, added.allowedParameters),
    deniedParameters: mergeConstraints(current.deniedParameters, added.deniedParameters),
    requiredParameters: [...new Set([...current.requiredParameters, ...added.requiredParameters])],
    minWrappingTtl: smallerBound(current.minWrappingTtl, added.minWrappingTtl),
    maxWrappingTtl: smallerBound(current.maxWrappingTtl, added.maxWrappingTtl),
  };
}

export function denyOnly(): PathPermissions {
  return {
    capabilities: DENY_ONLY,
    allowedParameters: new Map(),
    deniedParameters: new Map(),
    requiredParameters: [],
    minWrappingTtl: 0,
    maxWrappingTtl: 0,
  };
}

function mergeConstraints(current: ParameterConstraints, added: ParameterConstraints): ParameterConstraints {
  const merged = new Map(current);
  for (const [name, values] of added) {
    const existing = merged.get(name);
    const anyValue = values.length === 0 || existing?.length === 0;
    merged.set(name, anyValue ? [] : [...values, ...(existing ?? [])]);
  }
  return merged;
}

/** 0 means "no bound", so it never wins over a set bound. */
function smallerBound(a: number, b: number): number {
  if (a === 0) return b;
  if (b === 0) return a;
  return Math.min(a, b);
}
