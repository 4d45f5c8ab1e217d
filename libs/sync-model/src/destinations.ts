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
}

export const OBFUSCATED = '*****';

export const CONNECTION_FIELDS: Record<DestinationType, Record<string, ConnectionField>> = {
  'cloud-sm': {
    access_key_id: { description: 'Access key id; when empty, the provider credential chain and environment are used.', sensitive: true },
    secret_access_key: { description: 'Secret access key; when empty, the provider credential chain and environment are used.', sensitive: true },
    region: { description: 'Region of the secrets manager; when empty, the environment decides.', immutable: true },
  },
  'cloudb-kv': {
    key_vault_uri: { description: 'URI of an existing key vault.', required: true, immutable: true },
    client_id: { description: 'Client id of the app registration.', required: true },
    client_secret: { description: 'Client secret of the app registration.', required: true, sensitive: true },
    tenant_id: { description: 'Directory (tenant) id.', required: true, immutable: true },
    cloud: { description: 'Cloud of the client: `cloud` (public), `china` or `usgov`.', allowed: ['cloud', 'china', 'usgov'], default: 'cloud', immutable: true },
    subscription_id: { description: 'Subscription of the key vault (informational).' },
  },
  'cloudc-sm': {
    credentials: { description: 'Service-account JSON credentials, or `@<path>` of a file holding them.', required: true, sensitive: true },
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
