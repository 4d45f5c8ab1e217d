import type { EngineContext } from '@svc/engine-host';
import type { MountInfo } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { DEFAULT_PASSWORD_POLICY, generatePassword, parsePasswordPolicy, PasswordPolicyError } from '@svc/password-policy';

/**
 * A password under the named policy (sys/policies/password/:name) of the mount's namespace, or
 * under the default policy for an empty name.
 */
export async function policyPassword(context: EngineContext, mount: MountInfo, name: string): Promise<string> {
  if (name === '') return generatePassword(DEFAULT_PASSWORD_POLICY);
  const text = await context.passwordPolicy(mount.namespace, name);
  if (text === undefined) throw ServiceError.badRequest(`password policy "${name}" does not exist`);
  try {
    return generatePassword(parsePasswordPolicy(text));
  } catch (err) {
    if (err instanceof PasswordPolicyError) throw ServiceError.badRequest(`password policy "${name}": ${err.message}`);
    throw err;
  }
}
