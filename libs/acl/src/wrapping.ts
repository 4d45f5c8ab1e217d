import type { PathPermissions } from './types';

/**
 * Why a request may not proceed under the rule's wrapping TTL bounds, or undefined when it may.
 * As in Vault, a rule with a bound requires the response to be wrapped (`wrapTtl` in seconds,
 * undefined when the request asks for no wrapping), and bounds that merged into min > max allow nothing.
 */
export function wrappingTtlViolation(rule: PathPermissions, wrapTtl: number | undefined): string | undefined {
  const { minWrappingTtl: min, maxWrappingTtl: max } = rule;
  if (min === 0 && max === 0) return undefined;
  if (min !== 0 && max !== 0 && max < min) return 'the policies for this path set a minimum wrapping TTL above the maximum';
  if (wrapTtl === undefined) return 'this path requires the response to be wrapped';
  if (max !== 0 && wrapTtl > max) return `the wrapping TTL exceeds the maximum of ${max}s for this path`;
  if (min !== 0 && wrapTtl < min) return `the wrapping TTL is below the minimum of ${min}s for this path`;
  return undefined;
}
