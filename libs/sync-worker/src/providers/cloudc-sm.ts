import { AsyncLocalStorage } from 'node:async_hooks';
import type * as SecretManager from '@google-cloud/secret-manager';
import { parseServiceAccount, type ServiceAccountKey } from '@svc/sync-model';
import { MANAGED_TAG, ProviderError, providerFailure, withoutSecrets, type SecretStore } from './secret-store';

let sdk: Promise<typeof SecretManager> | undefined;

const CALL_OPTIONS = { maxRetries: 0 };

/**
 * The signal of the operation under way. The library's REST transport takes no signal per call
 * (and does not apply the `timeout` call option), so its requests go through `fetchUnderSignal`,
 * which finds the signal in the async context the operation runs its calls in.
 */
const operationSignal = new AsyncLocalStorage<AbortSignal>();

const fetchUnderSignal: typeof fetch = (input, init) => {
  const signals = [init?.signal, operationSignal.getStore()].filter((signal) => signal instanceof AbortSignal);
  return fetch(input, { ...init, signal: AbortSignal.any(signals) });
};

interface GoogleFault {
  /** The HTTP status the REST transport got. */
  status?: number;
  message?: string;
}

/** The REST transport's failure: its HTTP status (none: no answer) and the API's error message. */
function describeFault(err: unknown): { status?: number; message: string } {
  const fault = (err ?? {}) as GoogleFault;
  const raw = fault.message ?? 'request failed';
  let message = raw;
  try {
    message = (JSON.parse(raw) as { error?: { message?: string } }).error?.message ?? raw;
  } catch {
    // Not the API's JSON error: a transport message (connection refused, timeout).
  }
  return { status: typeof fault.status === 'number' ? fault.status : undefined, message };
}

/**
 * cloudc-sm destinations: a project's Secret Manager, as the service account in `credentials`
 * (the client signs its own JWTs with the account's key). A new name becomes a secret with
 * automatic replication and the managed label (plus `custom_tags` as labels), then each write
 * adds a version; removal deletes the secret with its versions.
 * The client always uses its REST transport: one code path whether it reaches Google or an
 * emulator, and no gRPC channel to keep per destination. `endpoint` (server configuration) is
 * the API's base URL for private endpoints and emulators.
 */
export async function cloudcSecretManager(details: Record<string, unknown>, tags: Record<string, string>, endpoint: string | undefined): Promise<SecretStore> {
  sdk ??= import('@google-cloud/secret-manager');
  const { SecretManagerServiceClient } = await sdk;
  let account: ServiceAccountKey;
  try {
    account = parseServiceAccount(String(details.credentials ?? ''));
  } catch (err) {
    throw new ProviderError('client', `credentials ${(err as Error).message}`);
  }
  const project = String(details.project_id || account.project_id || '');
  if (project === '') throw new ProviderError('client', 'no project: neither project_id nor the credentials name one');
  const api = endpoint ? new URL(endpoint) : undefined;
  const client = new SecretManagerServiceClient({
    credentials: { client_email: account.client_email, private_key: account.private_key, private_key_id: account.private_key_id },
    projectId: project,
    fallback: true,
    clientOptions: { transporterOptions: { fetchImplementation: fetchUnderSignal } },
    ...(api && { apiEndpoint: api.hostname, port: Number(api.port || (api.protocol === 'https:' ? 443 : 80)), protocol: api.protocol.slice(0, -1) }),
  });
  const failure = (err: unknown) => {
    const { status, message } = describeFault(err);
    return providerFailure(status, withoutSecrets(message, [account.private_key]));
  };
  const status = (err: unknown) => describeFault(err).status;
  const secretPath = (name: string) => client.secretPath(project, name);
  const labels = { [MANAGED_TAG.key]: MANAGED_TAG.value, ...tags };

  return {
    upsert: (name, value, signal) =>
      operationSignal.run(signal, async () => {
        try {
          await client.createSecret({ parent: client.projectPath(project), secretId: name, secret: { replication: { automatic: {} }, labels } }, CALL_OPTIONS).catch((err: unknown) => {
            if (status(err) !== 409) throw err;
          });
          await client.addSecretVersion({ parent: secretPath(name), payload: { data: Buffer.from(value, 'utf8') } }, CALL_OPTIONS);
        } catch (err) {
          throw failure(err);
        }
      }),
    remove: (name, signal) =>
      operationSignal.run(signal, async () => {
        try {
          await client.deleteSecret({ name: secretPath(name) }, CALL_OPTIONS);
        } catch (err) {
          if (status(err) !== 404) throw failure(err);
        }
      }),
    close: () => void client.close(),
  };
}
