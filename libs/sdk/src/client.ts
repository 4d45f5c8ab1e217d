import { apiError, SvcConnectionError } from './errors';
import { Database, KvV2, Leases, Logins, Tokens, Transit, Wrapping } from './areas';
import { SysClient } from './sys';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as delay } from 'node:timers/promises';
import type { ApiResponse, ClientCalls, Envelope, RequestOptions, SvcClientOptions, TlsOptions } from './types';

const DEFAULT_TIMEOUT_MS = 60_000;
/** Where a client of the environment goes when neither SVC_ADDR nor VAULT_ADDR says. */
export const DEFAULT_ADDRESS = 'http://127.0.0.1:8200';
const DEFAULT_MAX_RETRIES = 2;
const DEFAULT_RETRY_WAIT_MS = 1000;

/** A typed client of the service's HTTP API. Paths are given without the `/v1/` prefix. */
export class SvcClient implements ClientCalls {
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

  /**
   * A client as the environment configures one: `SVC_ADDR` (else `VAULT_ADDR`, else
   * http://127.0.0.1:8200), `SVC_TOKEN` (else `VAULT_TOKEN`) and `SVC_NAMESPACE` (else
   * `VAULT_NAMESPACE`), as the CLI reads them; `options` take precedence.
   */
  static fromEnv(options: Partial<SvcClientOptions> = {}, env: Readonly<Record<string, string | undefined>> = process.env): SvcClient {
    const first = (...names: string[]) => names.map((name) => env[name]).find((value) => value !== undefined && value !== '');
    return new SvcClient({
      address: first('SVC_ADDR', 'VAULT_ADDR') ?? DEFAULT_ADDRESS,
      token: first('SVC_TOKEN', 'VAULT_TOKEN'),
      namespace: first('SVC_NAMESPACE', 'VAULT_NAMESPACE'),
      ...options,
    });
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

  /**
   * A GET whose answer is a file (a snapshot), as a stream of its bytes; statuses >= 400 throw.
   * No timeout: a large file takes as long as it takes.
   */
  async download(path: string): Promise<Readable> {
    const { request, response } = this.open('GET', path, {});
    request.end();
    return this.succeeded('GET', path, await response);
  }

  /** A POST whose body is a file (a snapshot restore), streamed as it is read; statuses >= 400 throw. */
  async upload(path: string, body: Readable, contentType: string): Promise<void> {
    const { request, response } = this.open('POST', path, { headers: { 'Content-Type': contentType } });
    await Promise.all([pipeline(body, request), response.then(async (answer) => (await this.succeeded('POST', path, answer)).resume())]);
  }

  /** Starts a request whose body the caller streams; the answer arrives when the server gives it. */
  private open(method: string, path: string, opts: RequestOptions): { request: ClientRequest; response: Promise<IncomingMessage> } {
    const started = startHttp(new URL(this.url(path, opts.query)), method, this.headers(opts), undefined, this.options.tls);
    return { request: started.request, response: started.response.catch((err: unknown) => Promise.reject(new SvcConnectionError(this.baseUrl, err))) };
  }

  /** The answer itself when it succeeded; otherwise the API error its body describes. */
  private async succeeded(method: string, path: string, answer: IncomingMessage): Promise<IncomingMessage> {
    if ((answer.statusCode ?? 0) < 400) return answer;
    const text = await readText(answer);
    throw apiError(method, path, answer.statusCode ?? 0, text === '' ? null : parseBody(text), text);
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
      if (attempt < maxRetries && (answer === undefined ? !isCertificateRefused(failure) : isRetried(answer.status))) {
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

/** Starts one request over node:http(s), which takes the TLS options (fetch in Node 20 does not). */
function startHttp(url: URL, method: string, headers: Record<string, string>, timeoutMs: number | undefined, tls: TlsOptions | undefined): { request: ClientRequest; response: Promise<IncomingMessage> } {
  const secure = url.protocol === 'https:';
  const send = secure ? httpsRequest : httpRequest;
  let request!: ClientRequest;
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    request = send(
      url,
      {
        method,
        headers,
        ...(timeoutMs !== undefined && { signal: AbortSignal.timeout(timeoutMs) }),
        ...(secure && tls ? { ca: tls.ca, cert: tls.cert, key: tls.key, servername: tls.serverName, rejectUnauthorized: !tls.insecureSkipVerify } : {}),
      },
      resolve,
    );
    request.on('error', reject);
  });
  return { request, response };
}

/** One whole HTTP exchange: the body sent, the answer read. */
async function sendHttp(url: URL, method: string, headers: Record<string, string>, body: string | undefined, timeoutMs: number, tls: TlsOptions | undefined): Promise<RawAnswer> {
  const { request, response } = startHttp(url, method, body === undefined ? headers : { ...headers, 'Content-Length': String(Buffer.byteLength(body)) }, timeoutMs, tls);
  request.end(body);
  const answer = await response;
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined) flat[name] = String(value);
  return { status: answer.statusCode ?? 0, headers: flat, text: await readText(answer) };
}

async function readText(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Vault's client retries these: a server error other than "not implemented", and 412 (a replica not caught up yet). */
function isRetried(status: number): boolean {
  return (status >= 500 && status !== 501) || status === 412;
}

/**
 * The server's certificate was not trusted (unknown CA, wrong name, expired): trying again cannot
 * change that, so Vault's client does not retry it either. Node reports OpenSSL's verify codes.
 */
function isCertificateRefused(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /CERT|^UNABLE_TO_|^HOSTNAME_MISMATCH$/.test(code);
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
