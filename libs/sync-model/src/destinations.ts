import type { DestinationType } from './model';

/** One connection detail of a destination type, as Document 1 lists it. */
export interface ConnectionField {
  description: string;
  required?: boolean;
  /** Credentials: stored in the barrier, answered as "*****" (an empty value stays empty). */
  sensitive?: boolean;
  /** Names the external resource; an update may not change it. */
  immutable?: boolean;
  list?: boolean;
  allowed?: readonly string[];
  default?: string;
  /** What is wrong with a value, if anything; checked when a destination is written. */
  check?: (value: string) => string | undefined;
}

export const OBFUSCATED = '*****';

function httpsUrlProblem(value: string): string | undefined {
  return URL.canParse(value) && new URL(value).protocol === 'https:' ? undefined : 'must be an https URL';
}

/** The fields of a service-account key file the secret manager's client signs its requests with. */
export interface ServiceAccountKey {
  client_email: string;
  private_key: string;
  /** Named in the signed JWTs' `kid`, so the provider knows which of the account's keys signed. */
  private_key_id?: string;
  project_id?: string;
}

/** A service-account key file; throws an Error saying what is wrong (never quoting the file). */
export function parseServiceAccount(text: string): ServiceAccountKey {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error('must be a service-account key file (JSON)');
  }
  const key = (parsed ?? {}) as Partial<Record<keyof ServiceAccountKey, unknown>>;
  for (const field of ['client_email', 'private_key'] as const) {
    if (typeof key[field] !== 'string' || key[field] === '') throw new Error(`must be a service-account key file: "${field}" is missing`);
  }
  if (!String(key.private_key).includes('PRIVATE KEY')) throw new Error('must be a service-account key file: "private_key" is not a PEM private key');
  const optional = (field: 'private_key_id' | 'project_id') => (typeof key[field] === 'string' ? { [field]: key[field] as string } : {});
  return { client_email: String(key.client_email), private_key: String(key.private_key), ...optional('private_key_id'), ...optional('project_id') };
}

function serviceAccountProblem(value: string): string | undefined {
  try {
    parseServiceAccount(value);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

export const CONNECTION_FIELDS: Record<DestinationType, Record<string, ConnectionField>> = {
  'cloud-sm': {
    access_key_id: { description: 'Access key id; when empty, the provider credential chain and environment are used.', sensitive: true },
    secret_access_key: { description: 'Secret access key; when empty, the provider credential chain and environment are used.', sensitive: true },
    region: { description: 'Region of the secrets manager; when empty, the environment decides.', immutable: true },
  },
  'cloudb-kv': {
    key_vault_uri: { description: 'URI of an existing key vault, e.g. https://NAME.vault.azure.net.', required: true, immutable: true, check: httpsUrlProblem },
    client_id: { description: 'Client id of the app registration.', required: true },
    client_secret: { description: 'Client secret of the app registration.', required: true, sensitive: true },
    tenant_id: { description: 'Directory (tenant) id.', required: true, immutable: true },
    cloud: { description: 'Cloud of the client: `cloud` (public), `china` or `usgov`.', allowed: ['cloud', 'china', 'usgov'], default: 'cloud', immutable: true },
    subscription_id: { description: 'Subscription of the key vault (informational).' },
  },
  'cloudc-sm': {
    credentials: { description: 'Service-account key file (JSON); the CLI reads it from a file given as `@<path>`.', required: true, sensitive: true, check: serviceAccountProblem },
    project_id: { description: 'Project to create secrets in; default: the credentials\' project.', immutable: true },
  },
  codehost: {
    access_token: { description: 'Fine-grained or personal access token allowed to write the repository\'s Actions secrets.', required: true, sensitive: true },
    repository_owner: { description: 'Organization or user that owns the repository.', required: true, immutable: true },
    repository_name: { description: 'Name of the repository.', required: true, immutable: true },
  },
  'webhost-project': {
    access_token: { description: 'Token allowed to manage the project\'s environment variables.', required: true, sensitive: true },
    project_id: { description: 'Project id.', required: true, immutable: true },
    team_id: { description: 'Team that owns the project, if any.' },
    deployment_environments: {
      description: 'Environments the variables apply to: `development`, `preview`, `production`.',
      required: true,
      list: true,
      allowed: ['development', 'preview', 'production'],
    },
  },
};

/** Connection details as a read answers them: sensitive values masked. */
export function obfuscated(type: DestinationType, details: Record<string, unknown>): Record<string, unknown> {
  const fields = CONNECTION_FIELDS[type];
  return Object.fromEntries(Object.entries(details).map(([name, value]) => [name, fields[name]?.sensitive && value !== '' ? OBFUSCATED : value]));
}
