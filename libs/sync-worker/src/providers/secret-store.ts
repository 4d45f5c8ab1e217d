/**
 * What the sync worker needs of a provider: write a value under a name (creating the secret,
 * marked as managed by this service, or adding a version) and delete a name (already gone is
 * success). Failures are ProviderErrors that say whose fault they are. `signal` bounds every
 * request the operation makes (its deadline, or the worker stopping): when it fires, the
 * requests under way are cancelled, connecting included, and the operation fails.
 */
export interface SecretStore {
  upsert(name: string, value: string, signal: AbortSignal): Promise<void>;
  remove(name: string, signal: AbortSignal): Promise<void>;
  close(): void;
}

/** Endpoint overrides of the providers' APIs (server configuration `provider_endpoints`). */
export type { ProviderEndpoints } from '@svc/config';

/** The tag (or label) every secret this service creates carries, so nothing else is ever taken for ours. */
export const MANAGED_TAG = { key: 'svc-managed', value: 'secrets-service' };

/**
 * `client`: the provider refused the request (credentials, permissions, a name or value it does
 * not accept); retrying the same request cannot help. `external`: the provider failed (5xx,
 * throttling, no answer); the worker retries with backoff.
 */
export class ProviderError extends Error {
  constructor(
    readonly side: 'client' | 'external',
    message: string,
    /** The provider's HTTP status; none when it did not answer. */
    readonly status?: number,
  ) {
    super(message);
  }
}

/** A provider's HTTP status (none: it did not answer) as a ProviderError; 408, 409 and 429 are worth retrying. */
export function providerFailure(status: number | undefined, message: string): ProviderError {
  const retryable = status === undefined || status >= 500 || status === 408 || status === 409 || status === 429;
  const prefix = status === undefined ? 'no answer from the provider' : `provider answered ${status}`;
  return new ProviderError(retryable ? 'external' : 'client', `${prefix}: ${message}`, status);
}

/** Strips credentials from a provider message before it is stored as an association's cause. */
export function withoutSecrets(message: string, secrets: readonly unknown[]): string {
  return secrets.reduce<string>((text, secret) => (typeof secret === 'string' && secret.length > 3 ? text.split(secret).join('<redacted>') : text), message);
}
