import type { MountInfo } from '@svc/framework';
import { ServiceError } from '@svc/http';
import { DEFAULT_PASSWORD_POLICY, DEFAULT_PASSWORD_POLICY_HCL, generatePassword, parsePasswordPolicy, PasswordPolicyError } from '@svc/password-policy';

/**
 * Looks up a named password policy (sys/policies/password/:name) and returns its HCL, or
 * undefined when there is no such policy. The core provides the real one; until then every name
 * resolves to the default policy.
 */
export type PasswordPolicyResolver = (name: string, mount: MountInfo) => Promise<string | undefined>;

export const defaultPolicyResolver: PasswordPolicyResolver = async () => DEFAULT_PASSWORD_POLICY_HCL;

/** A password under the named policy, or the default policy for an empty name. */
export async function policyPassword(resolver: PasswordPolicyResolver, name: string, mount: MountInfo): Promise<string> {
  if (name === '') return generatePassword(DEFAULT_PASSWORD_POLICY);
  const text = await resolver(name, mount);
  if (text === undefined) throw ServiceError.badRequest(`password policy "${name}" does not exist`);
  try {
    return generatePassword(parsePasswordPolicy(text));
  } catch (err) {
    if (err instanceof PasswordPolicyError) throw ServiceError.badRequest(`password policy "${name}": ${err.message}`);
    throw err;
  }
}
