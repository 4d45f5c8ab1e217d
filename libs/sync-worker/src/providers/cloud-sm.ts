import type * as SecretsManagerSdk from '@aws-sdk/client-secrets-manager';
import { cloudCredentials, cloudRegion } from '@svc/config';
import { MANAGED_TAG, providerFailure, type SecretStore } from './secret-store';

let sdk: Promise<typeof SecretsManagerSdk> | undefined;

interface AwsFault {
  name?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

/**
 * cloud-sm destinations: the provider's secrets manager. A new name is created with the managed
 * tag; an existing one gets a new version. Deletion is immediate (no recovery window), so the name
 * can be used again at once; a name that is not there is already deleted. The request handler's
 * own timeouts are not used: past `requestTimeout` it only logs a warning unless told to throw;
 * the operation's signal ends each request instead.
 */
export async function cloudSecretsManager(details: Record<string, unknown>, tags: Record<string, string>, endpoint: string | undefined): Promise<SecretStore> {
  sdk ??= import('@aws-sdk/client-secrets-manager');
  const SM = await sdk;
  const client = new SM.SecretsManagerClient({
    region: cloudRegion(details.region as string | undefined),
    credentials: cloudCredentials(details.access_key_id as string | undefined, details.secret_access_key as string | undefined),
    endpoint: endpoint || undefined,
    maxAttempts: 1,
  });
  const failure = (err: unknown) => {
    const fault = (err ?? {}) as AwsFault;
    return providerFailure(fault.$metadata?.httpStatusCode, `${fault.name ?? 'Error'}: ${fault.message ?? ''}`);
  };
  const Tags = [{ Key: MANAGED_TAG.key, Value: MANAGED_TAG.value }, ...Object.entries(tags).map(([Key, Value]) => ({ Key, Value }))];
  return {
    async upsert(name, value, abortSignal) {
      try {
        await client.send(new SM.CreateSecretCommand({ Name: name, SecretString: value, Tags }), { abortSignal });
      } catch (err) {
        if ((err as AwsFault).name !== 'ResourceExistsException') throw failure(err);
        try {
          await client.send(new SM.PutSecretValueCommand({ SecretId: name, SecretString: value }), { abortSignal });
        } catch (putErr) {
          throw failure(putErr);
        }
      }
    },
    async remove(name, abortSignal) {
      try {
        await client.send(new SM.DeleteSecretCommand({ SecretId: name, ForceDeleteWithoutRecovery: true }), { abortSignal });
      } catch (err) {
        if ((err as AwsFault).name !== 'ResourceNotFoundException') throw failure(err);
      }
    },
    close: () => client.destroy(),
  };
}
