import type { Block } from './blocks';

/**
 * Environment variables that set fields of a stanza, as Vault's PostgreSQL storage reads
 * VAULT_PG_CONNECTION_URL and its pkcs11 seal VAULT_HSM_*: a deployment passes passwords, PINs (or a seal's key id)
 * without writing them into configuration files. A variable beats the file; an empty one counts as unset.
 */
const SECRET_ENVIRONMENT_VARIABLES = [
  { variable: 'SVC_PG_CONNECTION_URL', stanza: 'storage', type: 'postgresql', field: 'connection_url' },
  { variable: 'SVC_NATS_PASSWORD', stanza: 'bus', type: 'nats', field: 'password' },
  { variable: 'SVC_REDIS_PASSWORD', stanza: 'locks', type: 'redis', field: 'password' },
  // Vault's awskms seal reads these two before its configuration (VAULT_AWSKMS_SEAL_KEY_ID there).
  { variable: 'SVC_AWSKMS_SEAL_KEY_ID', stanza: 'seal', type: 'awskms', field: 'kms_key_id' },
  { variable: 'AWS_KMS_ENDPOINT', stanza: 'seal', type: 'awskms', field: 'endpoint' },
  ...(['lib', 'slot', 'token_label', 'pin', 'key_label', 'key_id', 'mechanism', 'generate_key', 'rsa_oaep_hash'] as const).map((field) => ({
    variable: `SVC_HSM_${field.toUpperCase()}`,
    stanza: 'seal',
    type: 'pkcs11',
    field,
  })),
] as const;

/**
 * The blocks of one stanza with the fields that set variables name replaced, before they are
 * validated like any field of the file. A variable without its stanza is reported as a warning.
 */
export function withSecretsFromEnvironment(
  stanza: string,
  blocks: Block[],
  environment: NodeJS.ProcessEnv,
  sourceName: string,
  warnings: string[],
): Block[] {
  let result = blocks;
  for (const { variable, type, field } of SECRET_ENVIRONMENT_VARIABLES.filter((entry) => entry.stanza === stanza)) {
    const value = environment[variable];
    if (!value) continue;
    if (!result.some((block) => block.type === type)) {
      warnings.push(`${sourceName}: ${variable} is set but there is no ${stanza} "${type}" stanza; ignored`);
      continue;
    }
    result = result.map((block) => (block.type === type ? { type, body: { ...block.body, [field]: value } } : block));
  }
  return result;
}
