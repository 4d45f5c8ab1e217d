/**
 * The fetch the OIDC and JWKS clients call the identity provider with: Node's global fetch takes no
 * per-request CA, and its only deadline is the caller's signal, which a library may not set.
 */
import { isNativeError } from 'node:util/types';
import { exchange, type OutboundAnswer } from '@svc/api-contract';

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
    const body = await bodyBytes(init.body);
    let answer: OutboundAnswer;
    try {
      answer = await exchange(new URL(url), { method: init.method ?? 'GET', headers: Object.fromEntries(new Headers(init.headers)), body, ca: caPem || undefined, deadlineMs, signal: init.signal });
    } catch (err) {
      throw new ProviderUnreachable(failureReason(err), { cause: err });
    }
    return new Response(BODILESS.has(answer.status) ? null : answer.body, { status: answer.status, statusText: answer.statusMessage, headers: responseHeaders(answer.rawHeaders) });
  };
}

export type ProviderFetch = ReturnType<typeof providerFetch>;

async function bodyBytes(body: ProviderFetchInit['body']): Promise<Buffer | undefined> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof URLSearchParams) return Buffer.from(body.toString());
  return Buffer.from(await new Response(body).arrayBuffer());
}

function responseHeaders(rawHeaders: string[]): Headers {
  const headers = new Headers();
  for (let index = 0; index < rawHeaders.length; index += 2) headers.append(rawHeaders[index], rawHeaders[index + 1]);
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
