import { ServiceError } from '@svc/api-contract';
import { readPathRules } from './rules';
import { readPolicySource } from './source';
import type { Policy } from './types';

export const ROOT_POLICY = 'root';
const NAME = /^[a-z0-9_-][a-z0-9_.-]*$/;

/**
 * Parses an ACL policy written in HCL or JSON (see `readPolicySource`), keeping its text for reads.
 * Throws a 400 ServiceError naming the policy, the path pattern and what is wrong.
 */
export function parsePolicy(name: string, text: string): Policy {
  const policyName = normalizePolicyName(name);
  const label = `policy "${policyName}"`;
  if (text.trim() === '') throw ServiceError.badRequest(`${label}: the policy document is empty`);
  return { name: policyName, text, rules: readPathRules(label, readPolicySource(label, text)) };
}

/**
 * The stored form of a policy name: trimmed and lower-cased, as Vault does. Throws a 400 for a
 * name outside [a-z0-9_.-] (or starting with '.') and for `root`, which cannot be created or changed.
 */
export function normalizePolicyName(name: string): string {
  const normalized = name.trim().toLowerCase();
  if (normalized === '') throw ServiceError.badRequest('a policy name is required');
  if (!NAME.test(normalized)) {
    throw ServiceError.badRequest(
      `invalid policy name ${JSON.stringify(name)}: use letters, digits, "_", "-" and "." (not first)`,
    );
  }
  if (normalized === ROOT_POLICY) throw ServiceError.badRequest('the root policy cannot be created or changed');
  return normalized;
}
