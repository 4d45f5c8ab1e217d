/**
 * The provider's IAM and STS clients for one mount (a cloud-credential engine or a cloud auth method), built from its root configuration, and the one
 * place provider failures become answers: a refusal (4xx) is a 400 with the provider's message;
 * throttling, a server fault or no answer is a 502. Every attempt of a call is bounded (a connection
 * in CONNECT_TIMEOUT_MS, an answer in ANSWER_TIMEOUT_MS), and there are `max_retries` more, so a
 * provider that is down or silent fails the request, naming the endpoint that did not answer.
 */
import type * as IamSdk from '@aws-sdk/client-iam';
import type * as StsSdk from '@aws-sdk/client-sts';
import { cloudCredentials, cloudRegion } from '@svc/config';
import { boundedRequestHandler, ServiceError } from '@svc/api-contract';

/** What the clients are built from: a mount's stored configuration of its provider access. */
export interface ProviderConfig {
  access_key: string;
  secret_key: string;
  region: string;
  iam_endpoint: string;
  sts_endpoint: string;
  /** Retries after a failed provider call; -1 for the SDK's default. */
  max_retries: number;
}

export interface ProviderClients {
  iam: IamSdk.IAMClient;
  sts: StsSdk.STSClient;
  /** The SDK modules, for their commands: `iam.send(new IAM.GetUserCommand({}))`. */
  IAM: typeof IamSdk;
  STS: typeof StsSdk;
  /** Secrets the clients sign with, never to appear in a message. */
  secrets: string[];
}

let sdk: Promise<{ IAM: typeof IamSdk; STS: typeof StsSdk }> | undefined;

/** The SDK is loaded on first use, so processes that never serve a cloud mount do not pay its start-up (about a second of CPU). */
function loadSdk(): Promise<{ IAM: typeof IamSdk; STS: typeof StsSdk }> {
  sdk ??= Promise.all([import('@aws-sdk/client-iam'), import('@aws-sdk/client-sts')]).then(([IAM, STS]) => ({ IAM, STS }));
  return sdk;
}

const CONNECT_TIMEOUT_MS = 2_000;
/** An attempt whose answer has not come (or has stalled) this long after the connection is given up. */
export const ANSWER_TIMEOUT_MS = 10_000;
const THROTTLING = new Set(['Throttling', 'ThrottlingException', 'RequestLimitExceeded', 'TooManyRequestsException', 'RequestThrottled', 'SlowDown']);

/** Region: the configuration's, then CLOUD_REGION, then CLOUD_DEFAULT_REGION, then us-east-1. */
export function providerRegion(config: Pick<ProviderConfig, 'region'> | null, env: NodeJS.ProcessEnv = process.env): string {
  return cloudRegion(config?.region, env);
}

/** Credentials: the configuration's, then CLOUD_ACCESS_KEY/CLOUD_SECRET_KEY, then the SDK's chain. */
export function providerCredentials(config: Pick<ProviderConfig, 'access_key' | 'secret_key'> | null, env: NodeJS.ProcessEnv = process.env): { accessKeyId: string; secretAccessKey: string } | undefined {
  return cloudCredentials(config?.access_key, config?.secret_key, env);
}

/** An endpoint override as configured: empty (the provider's), or a URL. */
export function endpointField(name: string, value: string): string {
  if (value && !URL.canParse(value)) throw ServiceError.badRequest(`field "${name}": "${value}" is not a URL`);
  return value;
}

/** What every client of a configuration is built with: region, credentials, retries and timeouts. */
export function clientSettings(config: ProviderConfig | null) {
  return {
    region: providerRegion(config),
    credentials: providerCredentials(config),
    maxAttempts: config && config.max_retries >= 0 ? config.max_retries + 1 : undefined,
    requestHandler: boundedRequestHandler(CONNECT_TIMEOUT_MS, ANSWER_TIMEOUT_MS),
  };
}

/** The SDK client surface `namingEndpoint` needs; every AWS SDK v3 client has it. */
interface MiddlewareClient {
  middlewareStack: { add(middleware: (next: (args: never) => Promise<unknown>) => (args: never) => Promise<unknown>, options: { step: 'initialize'; name: string }): void };
}

/** Marks what `client` throws with the provider endpoint it called (IAM, STS, EC2), so a failure without an answer names it. */
export function namingEndpoint<C extends MiddlewareClient>(client: C, endpoint: string): C {
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (err) {
        if (err !== null && typeof err === 'object') Object.assign(err, { endpoint });
        throw err;
      }
    },
    { step: 'initialize', name: 'namingEndpoint' },
  );
  return client;
}

/**
 * Clients for the mount's current configuration. Replicas read the configuration from storage on
 * every request, so the cache is keyed by it: a changed configuration (rotate-root, a new
 * endpoint) gets new clients wherever it is read next.
 */
export class ProviderClientCache {
  private cached?: { key: string; clients: ProviderClients };

  async get(config: ProviderConfig | null): Promise<ProviderClients> {
    const { IAM, STS } = await loadSdk();
    const env = process.env;
    const key = JSON.stringify([config, env.CLOUD_ACCESS_KEY, env.CLOUD_SECRET_KEY, env.CLOUD_REGION, env.CLOUD_DEFAULT_REGION]);
    if (this.cached?.key === key) return this.cached.clients;
    this.close();
    const settings = clientSettings(config);
    const clients: ProviderClients = {
      iam: namingEndpoint(new IAM.IAMClient({ ...settings, endpoint: config?.iam_endpoint || undefined }), 'IAM'),
      sts: namingEndpoint(new STS.STSClient({ ...settings, endpoint: config?.sts_endpoint || undefined }), 'STS'),
      IAM,
      STS,
      secrets: [config?.secret_key ?? '', env.CLOUD_SECRET_KEY ?? ''].filter(Boolean),
    };
    this.cached = { key, clients };
    return clients;
  }

  close(): void {
    this.cached?.clients.iam.destroy();
    this.cached?.clients.sts.destroy();
    this.cached = undefined;
  }
}

interface ProviderFault {
  name?: string;
  message?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
  /** The endpoint called (see namingEndpoint). */
  endpoint?: string;
}

/** The provider's error code, without the SDK's `Exception` suffix (`NoSuchEntity`, `LimitExceeded`). */
export function providerErrorCode(err: unknown): string {
  return ((err as ProviderFault | undefined)?.name ?? '').replace(/Exception$/, '');
}

function withoutSecrets(message: string, secrets: readonly string[]): string {
  return secrets.reduce((text, secret) => (secret ? text.split(secret).join('<redacted>') : text), message);
}

/** Whether the call failed because the provider did not answer in time (connection, answer or stalled answer). */
export function isTimeout(err: unknown): boolean {
  return (err as ProviderFault | undefined)?.name === 'TimeoutError';
}

/** Whether the provider answered and refused the call (4xx other than throttling): nothing was done. */
export function isRefusal(err: unknown): boolean {
  const status = (err as ProviderFault | undefined)?.$metadata?.httpStatusCode;
  return status !== undefined && status >= 400 && status < 500 && !THROTTLING.has(providerErrorCode(err));
}

/** A provider failure as the client sees it. */
export function providerError(action: string, err: unknown, secrets: readonly string[]): ServiceError {
  if (err instanceof ServiceError) return err;
  const fault = (err ?? {}) as ProviderFault;
  const status = fault.$metadata?.httpStatusCode;
  const code = providerErrorCode(err);
  const message = withoutSecrets(fault.message || fault.code || code || 'unknown error', secrets);
  if (isRefusal(err)) return ServiceError.badRequest(`${action}: ${code}: ${message}`);
  // Without an answer, which endpoint was silent is what an operator needs to know.
  const silent = fault.endpoint ? `${fault.endpoint} endpoint: ` : '';
  const reason = status === undefined ? `(the provider did not answer): ${silent}` : `(the provider answered ${status}): `;
  return ServiceError.badGateway(`${action} failed ${reason}${code ? `${code}: ` : ''}${message}`);
}

/** Runs provider calls; a failure becomes the client's answer (see providerError). */
export async function callProvider<T>(action: string, secrets: readonly string[], call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw providerError(action, err, secrets);
  }
}
