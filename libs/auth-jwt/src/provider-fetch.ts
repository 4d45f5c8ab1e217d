/**
 * The fetch the OIDC and JWKS clients call the identity provider with: Node's global fetch takes no
 * per-request CA, and its only deadline is the caller's signal, which a library may not set.
 */
import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isNativeError } from 'node:util/types';
import { withDeadline } from '@svc/api-contract';

export interface ProviderFetchOptions {
  /** PEM certificates the provider's TLS certificate must chain to, instead of the system's; '' for the system's. */
  caPem: string;
  /** The whole exchange (connect, send, answer in full) ends within this, or fails. */
  deadlineMs: number;
}

/** What openid-client and jose hand their fetch. */
export interface ProviderFetchInit {
  method?: string;
  headers?: ConstructorParameters<typeof Headers>[0];
  body?: string | URLSearchParams | Uint8Array | ArrayBuffer | ReadableStream | null;
  /** Aborts the exchange early (the libraries' own timeouts). */
  signal?: AbortSignal | null;
}

/** The provider did not answer: unreachable, a TLS failure, or no complete answer in time. */
export class ProviderUnreachable extends Error {
  override readonly name = 'ProviderUnreachable';
}

/** Answers without a body, which a WHATWG Response refuses to be built with. */
const BODILESS = new Set([101, 204, 205, 304]);

/**
 * A fetch over node:http(s) that trusts `caPem`, follows no redirect (the libraries ask for
 * `manual`) and answers a WHATWG Response once the whole body has arrived.
 */
export function providerFetch({ caPem, deadlineMs }: ProviderFetchOptions) {
  return async (url: string, init: ProviderFetchInit = {}): Promise<Response> => {
    const target = new URL(url);
    const body = await bodyBytes(init.body);
    const headers = Object.fromEntries(new Headers(init.headers));
    if (body) headers['content-length'] = String(body.length);
    const options: RequestOptions & { ca?: string } = { method: init.method ?? 'GET', headers, ...(target.protocol === 'https:' && caPem && { ca: caPem }) };
    const answer = await new Promise<{ res: IncomingMessage; body: Buffer }>((resolve, reject) => {
      const fail = (err: Error) => reject(new ProviderUnreachable(failureReason(err), { cause: err }));
      const req = (target.protocol === 'https:' ? httpsRequest : httpRequest)(target, options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ res, body: Buffer.concat(chunks) }));
        res.on('error', fail);
      });
      withDeadline(req, deadlineMs).on('error', fail);
      const signal = init.signal;
      if (signal) {
        const abort = () => req.destroy(new Error(`no answer within ${deadlineMs / 1000} s`));
        if (signal.aborted) abort();
        signal.addEventListener('abort', abort, { once: true });
        req.once('close', () => signal.removeEventListener('abort', abort));
      }
      req.end(body);
    });
    const status = answer.res.statusCode ?? 0;
    return new Response(BODILESS.has(status) ? null : answer.body, { status, statusText: answer.res.statusMessage, headers: responseHeaders(answer.res) });
  };
}

export type ProviderFetch = ReturnType<typeof providerFetch>;

async function bodyBytes(body: ProviderFetchInit['body']): Promise<Buffer | undefined> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof URLSearchParams) return Buffer.from(body.toString());
  return Buffer.from(await new Response(body).arrayBuffer());
}

function responseHeaders(res: IncomingMessage): Headers {
  const headers = new Headers();
  for (let index = 0; index < res.rawHeaders.length; index += 2) headers.append(res.rawHeaders[index], res.rawHeaders[index + 1]);
  return headers;
}

/** Whether a failure (or one of its causes, which the libraries wrap) is the provider not answering. */
export function unreachable(err: unknown): boolean {
  for (let cause = err; isNativeError(cause); cause = cause.cause) if (cause instanceof ProviderUnreachable) return true;
  return false;
}

/**
 * The words of a failed call for an error message: those of its innermost cause (the libraries wrap
 * what went wrong in words of their own), with the status of an HTTP answer they refused. Errors
 * are recognized whatever realm made them (Node's own, a library's).
 */
export function failureReason(err: unknown): string {
  let innermost = err;
  while (isNativeError(innermost) && isNativeError(innermost.cause)) innermost = innermost.cause;
  if (!isNativeError(innermost)) return String(innermost);
  const { code } = innermost as NodeJS.ErrnoException;
  const named = typeof code === 'string' && !innermost.message.includes(code) ? ` (${code})` : '';
  const answered = innermost.cause instanceof Response ? ` (HTTP ${innermost.cause.status})` : '';
  return `${innermost.message}${named}${answered}`;
}
