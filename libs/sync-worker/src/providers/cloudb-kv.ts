import type * as Identity from '@azure/identity';
import type * as KeyVaultSecrets from '@azure/keyvault-secrets';
import { PROVIDER_CALL_DEADLINE_MS } from '@svc/sync-model';
import { MANAGED_TAG, providerFailure, withoutSecrets, type SecretStore } from './secret-store';

let modules: Promise<[typeof Identity, typeof KeyVaultSecrets]> | undefined;

/** The directory of each `cloud` a destination may name. */
const AUTHORITY_HOSTS: Record<string, string> = {
  cloud: 'https://login.microsoftonline.com',
  china: 'https://login.chinacloudapi.cn',
  usgov: 'https://login.microsoftonline.us',
};

interface AzureFault {
  name?: string;
  message?: string;
  statusCode?: number;
  code?: string;
}

/**
 * The directory's refusals of the app's credentials arrive without a status (the identity library
 * rewraps them); these OAuth error codes in the message say the request, not the service, failed.
 */
const REFUSED_CREDENTIALS = /\b(invalid_client|unauthorized_client|invalid_request|invalid_scope|invalid_tenant|invalid_grant)\b|AADSTS\d+/;

type PipelinePolicy = NonNullable<Identity.ClientSecretCredentialOptions['additionalPolicies']>[number]['policy'];

/**
 * The identity library asks the directory for tokens without the caller's abort signal, so a
 * directory that never answers would hold the operation forever: each of its requests gets the
 * provider call deadline of its own.
 */
const directoryDeadline: PipelinePolicy = {
  name: 'directoryDeadline',
  sendRequest: (request, next) => {
    request.timeout = PROVIDER_CALL_DEADLINE_MS;
    return next(request);
  },
};

/**
 * cloudb-kv destinations: a key vault's secrets, reached with the app registration's client
 * credentials. Each write adds a version and sets the tags (the managed tag and `custom_tags`).
 * Removal soft-deletes the secret, then purges it so its name can be used again; under purge
 * protection the deleted secret stays, and a later write recovers it first.
 * `authorityOverride` (server configuration) replaces the cloud's directory, for private clouds
 * and emulators; the vault's challenge is then not matched against the vault's host name, which
 * only public vault hosts satisfy.
 */
export async function cloudbKeyVault(details: Record<string, unknown>, tags: Record<string, string>, authorityOverride: string | undefined): Promise<SecretStore> {
  modules ??= Promise.all([import('@azure/identity'), import('@azure/keyvault-secrets')]);
  const [identity, keyVault] = await modules;
  const clientSecret = String(details.client_secret ?? '');
  const credential = new identity.ClientSecretCredential(String(details.tenant_id ?? ''), String(details.client_id ?? ''), clientSecret, {
    authorityHost: authorityOverride || AUTHORITY_HOSTS[String(details.cloud || 'cloud')],
    disableInstanceDiscovery: Boolean(authorityOverride),
    retryOptions: { maxRetries: 0 },
    additionalPolicies: [{ policy: directoryDeadline, position: 'perCall' }],
  });
  const client = new keyVault.SecretClient(String(details.key_vault_uri ?? ''), credential, {
    disableChallengeResourceVerification: Boolean(authorityOverride),
    retryOptions: { maxRetries: 0 },
  });
  const failure = (err: unknown) => {
    const fault = (err ?? {}) as AzureFault;
    const message = withoutSecrets(`${fault.code ?? fault.name ?? 'Error'}: ${fault.message ?? ''}`, [clientSecret]);
    if (fault.statusCode === undefined && REFUSED_CREDENTIALS.test(fault.message ?? '')) return providerFailure(401, message);
    return providerFailure(fault.statusCode, message);
  };
  const status = (err: unknown) => (err as AzureFault | undefined)?.statusCode;
  const managedTags = { [MANAGED_TAG.key]: MANAGED_TAG.value, ...tags };
  const deletedButRecoverable = (err: unknown) => status(err) === 409 && /deleted but recoverable/i.test((err as AzureFault).message ?? '');

  return {
    async upsert(name, value, abortSignal) {
      try {
        try {
          await client.setSecret(name, value, { tags: managedTags, abortSignal });
        } catch (err) {
          if (!deletedButRecoverable(err)) throw err;
          await (await client.beginRecoverDeletedSecret(name, { abortSignal })).pollUntilDone({ abortSignal });
          await client.setSecret(name, value, { tags: managedTags, abortSignal });
        }
      } catch (err) {
        throw failure(err);
      }
    },
    async remove(name, abortSignal) {
      try {
        await (await client.beginDeleteSecret(name, { abortSignal })).pollUntilDone({ abortSignal });
      } catch (err) {
        // Not live: never written, or deleted before (and maybe not purged, which is retried below).
        if (status(err) !== 404) throw failure(err);
      }
      try {
        await client.purgeDeletedSecret(name, { abortSignal });
      } catch (err) {
        // 404: already purged; 403: purge protection (or no purge permission) keeps it recoverable.
        if (status(err) !== 404 && status(err) !== 403) throw failure(err);
      }
    },
    close: () => undefined,
  };
}
