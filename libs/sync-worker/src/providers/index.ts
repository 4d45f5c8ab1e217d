import type { Destination } from '@svc/sync-model';
import { cloudSecretsManager } from './cloud-sm';
import { cloudbKeyVault } from './cloudb-kv';
import { cloudcSecretManager } from './cloudc-sm';
import { codehostActionsSecrets } from './codehost';
import { webhostEnvironment } from './webhost';
import type { ProviderEndpoints, SecretStore } from './secret-store';

export { ProviderError, type ProviderEndpoints, type SecretStore } from './secret-store';

/** The provider client of a destination, built from its connection details and the server's endpoint overrides. */
export async function openSecretStore(destination: Destination, endpoints: ProviderEndpoints): Promise<SecretStore> {
  const details = destination.connection_details;
  switch (destination.type) {
    case 'cloud-sm':
      return cloudSecretsManager(details, destination.options.custom_tags, endpoints.cloud_sm);
    case 'cloudb-kv':
      return cloudbKeyVault(details, destination.options.custom_tags, endpoints.cloudb_authority);
    case 'cloudc-sm':
      return cloudcSecretManager(details, destination.options.custom_tags, endpoints.cloudc_sm);
    case 'codehost':
      return codehostActionsSecrets(details, endpoints.codehost);
    case 'webhost-project':
      return webhostEnvironment(details, endpoints.webhost);
  }
}
