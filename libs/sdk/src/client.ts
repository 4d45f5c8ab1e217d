import { apiError, SvcConnectionError } from './errors';
import { SysClient } from './sys';
import type { ApiResponse, Envelope, RequestOptions, SvcClientOptions } from './types';

const DEFAULT_TIMEOUT_MS = 60_000;

/** A typed client of the service's HTTP API. Paths are given without the `/v1/` prefix. */
export class SvcClient {
  readonly sys: SysClient;
  private readonly baseUrl: string;

  constructor(private readonly options: SvcClientOptions) {
    if (!URL.canParse(options.address)) throw new Error(`invalid service address "${options.address}"`);
    this.baseUrl = options.address.replace(/\/+$/, '');
    this.sys = new SysClient(this);
  }

  get address(): string {
    return this.baseUrl;
  }

  /** The same client with another token, or none (a login sends none). */
  withToken(token: string | undefined): SvcClient {
    return new SvcClient({ ...this.options, token });
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
  async download(path: string): Promise<ReadableStream<Uint8Array>> {
    const response = await this.fetch('GET', path, {}, {});
    if (response.status >= 400 || !response.body) throw await this.failure('GET', path, response);
    return response.body;
  }

  /** A POST whose body is a file (a snapshot restore), streamed as it is read; statuses >= 400 throw. */
  async upload(path: string, body: AsyncIterable<Uint8Array>, contentType: string): Promise<void> {
    const response = await this.fetch('POST', path, { headers: { 'Content-Type': contentType } }, { body: body as unknown as RequestInit['body'], duplex: 'half' } as RequestInit);
    if (response.status >= 400) throw await this.failure('POST', path, response);
    await response.body?.cancel();
  }

  private async failure(method: string, path: string, response: Response): Promise<Error> {
    const text = await response.text();
    return apiError(method, path, response.status, text === '' ? null : parseBody(text), text);
  }

  private async fetch(method: string, path: string, opts: RequestOptions, init: RequestInit): Promise<Response> {
    try {
      return await fetch(this.url(path, opts.query), { method, headers: this.headers(opts), ...init });
    } catch (err) {
      throw new SvcConnectionError(this.baseUrl, err);
    }
  }

  private async exchange<T>(
    method: string,
    path: string,
    opts: RequestOptions,
  ): Promise<{ response: ApiResponse<T>; text: string }> {
    const response = await this.fetch(method, path, opts, {
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: AbortSignal.timeout(this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    });
    const text = await response.text();
    return {
      response: {
        status: response.status,
        headers: headersObject(response.headers),
        body: text === '' ? null : parseBody<T>(text),
      },
      text,
    };
  }

  /** The secret at `path`, or null when nothing is there (404). */
  read(path: string, query?: RequestOptions['query']): Promise<Envelope | null> {
    return this.orNullWhenMissing('GET', path, { query });
  }

  /** Writes `data`; the envelope when the API answers with one (200), null for 204. */
  async write(path: string, data: Record<string, unknown> = {}): Promise<Envelope | null> {
    return (await this.request<Envelope>('PUT', path, { body: data })).body;
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
      ...opts.headers,
    };
  }
}

function headersObject(headers: Headers): Record<string, string> {
  const result: Record<string, string> = {};
  headers.forEach((value, name) => {
    result[name] = value;
  });
  return result;
}

function parseBody<T>(text: string): T | null {
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}
