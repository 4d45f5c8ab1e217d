import { apiError, SvcConnectionError } from './errors';
import { Database, KvV2, Leases, Logins, Tokens, Transit, Wrapping } from './areas';
import { SysClient } from './sys';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { setTimeout as delay } from 'node:timers/promises';
import type { ApiResponse, Envelope, RequestOptions, SvcClientOptions, TlsOptions } from './types';

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_RETRIES = 2;
const DEFAULT_RETRY_WAIT_MS = 1000;

/** A typed client of the service's HTTP API. Paths are given without the `/v1/` prefix. */
export class SvcClient {
  readonly sys: SysClient;
  readonly tokens: Tokens;
  readonly logins: Logins;
  readonly leases: Leases;
  readonly wrapping: Wrapping;
  private readonly baseUrl: string;

  constructor(private readonly options: SvcClientOptions) {
    if (!URL.canParse(options.address)) throw new Error(`invalid service address "${options.address}"`);
    this.baseUrl = options.address.replace(/\/+$/, '');
    this.sys = new SysClient(this);
    this.tokens = new Tokens(this);
    this.logins = new Logins(this);
    this.leases = new Leases(this);
    this.wrapping = new Wrapping(this);
  }

  /** The kv version 2 engine mounted at `mount`. */
  kv(mount = 'secret'): KvV2 {
    return new KvV2(this, mount);
  }

  transit(mount = 'transit'): Transit {
    return new Transit(this, mount);
  }

  database(mount = 'database'): Database {
    return new Database(this, mount);
  }

  get address(): string {
    return this.baseUrl;
  }

  /** The same client with another token, or none (a login sends none). */
  withToken(token: string | undefined): SvcClient {
    return this.withOptions({ token });
  }

  /** The same client with some options changed, e.g. `{ wrapTtl: undefined }` for a request never to wrap. */
  withOptions(options: Partial<SvcClientOptions>): SvcClient {
    return new SvcClient({ ...this.options, ...options });
  }

  /** Sends a request; statuses >= 400 throw SvcApiError. */
  async request<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
    const { response, text } = await this.exchange<T>(method, path, opts);
    if (response.status >= 400) throw apiError(method, path, response.status, response.body, text);
    return response;
  }

  /** Sends a request and returns the answer whatever its status (health answers 429/503 with a body). */
  async send<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
    return (await this.exchange<T>(method, path, opts)).response;
  }

  private async exchange<T>(
    method: string,
    path: string,
    opts: RequestOptions,
  ): Promise<{ response: ApiResponse<T>; text: string }> {
    const url = new URL(this.url(path, opts.query));
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const headers = this.headers(opts);
    const maxRetries = this.options.maxRetries ?? DEFAULT_MAX_RETRIES;
    for (let attempt = 0; ; attempt++) {
      let answer: RawAnswer | undefined;
      let failure: unknown;
      try {
        answer = await sendHttp(url, method, headers, body, this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS, this.options.tls);
      } catch (err) {
        failure = err;
      }
      if (attempt < maxRetries && (answer === undefined || isRetried(answer.status))) {
        await delay(backoff(this.options.retryWaitMs ?? DEFAULT_RETRY_WAIT_MS, attempt));
        continue;
      }
      if (answer === undefined) throw new SvcConnectionError(this.baseUrl, failure);
      return {
        response: { status: answer.status, headers: answer.headers, body: answer.text === '' ? null : parseBody<T>(answer.text) },
        text: answer.text,
      };
    }
  }

  /** The secret at `path`, or null when nothing is there (404). */
  read(path: string, query?: RequestOptions['query']): Promise<Envelope | null> {
    return this.orNullWhenMissing('GET', path, { query });
  }

  /** Writes `data`; the envelope when the API answers with one (200), null for 204. */
  async write(path: string, data: Record<string, unknown> = {}): Promise<Envelope | null> {
    return (await this.request<Envelope>('PUT', path, { body: data })).body;
  }

  /** Changes only the fields given (JSON merge patch, the PATCH verb). */
  async patch(path: string, data: Record<string, unknown>): Promise<Envelope | null> {
    return (await this.request<Envelope>('PATCH', path, { body: data, headers: { 'Content-Type': 'application/merge-patch+json' } })).body;
  }

  /** Sends the LIST verb; `data.keys` holds the names. Null when there is nothing to list (404). */
  list(path: string): Promise<Envelope | null> {
    return this.orNullWhenMissing('LIST', path, {});
  }

  async delete(path: string): Promise<Envelope | null> {
    return (await this.request<Envelope>('DELETE', path)).body;
  }

  private async orNullWhenMissing(method: string, path: string, opts: RequestOptions): Promise<Envelope | null> {
    const { response, text } = await this.exchange<Envelope>(method, path, opts);
    if (response.status === 404) return null;
    if (response.status >= 400) throw apiError(method, path, response.status, response.body, text);
    return response.body;
  }

  private url(path: string, query: RequestOptions['query']): string {
    const encodedPath = path.replace(/^\/+/, '').split('/').map(encodeURIComponent).join('/');
    const url = new URL(`${this.baseUrl}/v1/${encodedPath}`);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value === undefined) continue;
      url.searchParams.set(name, Array.isArray(value) ? value.join(',') : String(value));
    }
    return url.toString();
  }

  private headers(opts: RequestOptions): Record<string, string> {
    return {
      'X-Service-Request': 'true',
      ...(opts.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      ...(this.options.token ? { 'X-Service-Token': this.options.token } : {}),
      ...(this.options.namespace ? { 'X-Service-Namespace': this.options.namespace } : {}),
      ...(opts.wrapTtl || this.options.wrapTtl ? { 'X-Service-Wrap-TTL': (opts.wrapTtl ?? this.options.wrapTtl)! } : {}),
      ...opts.headers,
    };
  }
}

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/** One HTTP exchange over node:http(s), which takes the TLS options (fetch in Node 20 does not). */
function sendHttp(url: URL, method: string, headers: Record<string, string>, body: string | undefined, timeoutMs: number, tls: TlsOptions | undefined): Promise<RawAnswer> {
  const secure = url.protocol === 'https:';
  const send = secure ? httpsRequest : httpRequest;
  return new Promise<RawAnswer>((resolve, reject) => {
    const request = send(
      url,
      {
        method,
        headers: body === undefined ? headers : { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
        signal: AbortSignal.timeout(timeoutMs),
        ...(secure && tls
          ? { ca: tls.ca, cert: tls.cert, key: tls.key, servername: tls.serverName, rejectUnauthorized: !tls.insecureSkipVerify }
          : {}),
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const flat: Record<string, string> = {};
          for (const [name, value] of Object.entries(response.headers)) if (value !== undefined) flat[name] = String(value);
          resolve({ status: response.statusCode ?? 0, headers: flat, text: Buffer.concat(chunks).toString('utf8') });
        });
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** Vault's client retries these: a server error other than "not implemented", and 412 (a replica not caught up yet). */
function isRetried(status: number): boolean {
  return (status >= 500 && status !== 501) || status === 412;
}

/** The wait before retry `attempt` (0-based): grows linearly with jitter, as Vault's client. */
function backoff(baseMs: number, attempt: number): number {
  return baseMs * (attempt + 1) * (1 + Math.random() / 2);
}

function parseBody<T>(text: string): T | null {
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}
