import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { DEFAULT_WORKERS, type Topology } from '@svc/local-cluster';

/** The fields tests read most often; a test names a precise type when it needs one. */
export interface ApiBody {
  errors: string[];
  warnings: string[] | null;
  data: Record<string, unknown>;
  [field: string]: unknown;
}

export interface ApiResponse<T = ApiBody> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body, or undefined for an empty body. */
  body: T;
  text: string;
}

export interface ApiOptions {
  token?: string;
  body?: unknown;
  /** Raw body bytes/text sent as is (malformed JSON tests). */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  /** CA certificate (PEM) trusted for https URLs. */
  ca?: string;
}

/**
 * With several gateway workers (SVC_TEST_WORKERS), every request goes on a connection of its own:
 * the primary hands connections to the workers in turn, so a test's consecutive requests meet
 * different workers, as they meet different replicas behind a load balancer. A kept-alive
 * connection would pin a whole test to one worker.
 */
const CONNECTION_HEADERS: Record<string, string> = DEFAULT_WORKERS > 1 ? { connection: 'close' } : {};

/**
 * One HTTP request with node:http, so any method (LIST included) goes on the wire exactly as a
 * client would send it and the raw status, headers and body come back for assertions.
 */
export function api<T = ApiBody>(baseUrl: string, method: string, path: string, options: ApiOptions = {}): Promise<ApiResponse<T>> {
  const url = new URL(path, baseUrl);
  const payload = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const headers: Record<string, string | number> = { ...CONNECTION_HEADERS, ...options.headers };
  if (options.token) headers['x-service-token'] = options.token;
  if (payload !== undefined) headers['content-length'] = Buffer.byteLength(payload);
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, { method, headers, ca: options.ca }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        if (text && String(res.headers['content-type'] ?? '').includes('json')) body = JSON.parse(text);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: body as T, text });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

export interface InitializedCluster {
  rootToken: string;
  keys: string[];
}

/** sys/init with `shares`/`threshold`, then unseals with the first `threshold` keys. */
export async function initAndUnseal(baseUrl: string, shares = 1, threshold = 1): Promise<InitializedCluster> {
  const init = await api<{ keys: string[]; root_token: string }>(baseUrl, 'PUT', '/v1/sys/init', {
    body: { secret_shares: shares, secret_threshold: threshold },
  });
  if (init.status !== 200) throw new Error(`init failed: ${init.status} ${init.text}`);
  for (const key of init.body.keys.slice(0, threshold)) {
    const res = await api(baseUrl, 'PUT', '/v1/sys/unseal', { body: { key } });
    if (res.status !== 200) throw new Error(`unseal failed: ${res.status} ${res.text}`);
  }
  return { rootToken: init.body.root_token, keys: init.body.keys };
}

/** Polls `check` until it returns true or `timeoutMs` passes (for effects that cross processes). */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 10_000, intervalMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A test's way of sending one request: method, path under /v1/, body, token. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ApiCall = (method: string, where: string, body?: unknown, token?: string) => Promise<ApiResponse<Record<string, any>>>;

/**
 * Asserting forms of `call`: `ok` expects 200 (204 for an empty answer) and returns the body;
 * `refused` expects `status` and an error matching `problem`. The path is in each assertion so a
 * failure says which call it was.
 */
export function assertingCalls(call: ApiCall) {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    ok: async (method: string, where: string, body?: unknown, token?: string): Promise<Record<string, any>> => {
      const res = await call(method, where, body, token);
      expect([where, res.status, res.text]).toEqual([where, res.status === 204 ? 204 : 200, expect.any(String)]);
      return res.body ?? {};
    },
    refused: async (method: string, where: string, body: unknown, status: number, problem: RegExp): Promise<void> => {
      const res = await call(method, where, body);
      expect([where, res.status]).toEqual([where, status]);
      expect((res.body.errors as string[]).join('; ')).toMatch(problem);
    },
  };
}

/**
 * Stops the named gateways, then starts each alone (and stops it again after `check` of its URL),
 * so no peer holds the keyring to hand over: each must open its seal itself. Leaves them all running.
 */
export async function restartEachGatewayAlone(topology: Topology, names: string[], check: (url: string) => Promise<void>): Promise<void> {
  await Promise.all(names.map((name) => topology.stopProcess(name)));
  for (const name of names) {
    await topology.restartProcess(name);
    await check(`http://${topology.processes.find((p) => p.name === name)?.addresses[0]}`);
    await topology.stopProcess(name);
  }
  for (const name of names) await topology.restartProcess(name);
}
