import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

/**
 * The `requestHandler` of an AWS SDK v3 client whose every attempt ends: no connection within
 * `connectMs`, or no answer (or an answer that stalls) for `answerMs`, fails it with a TimeoutError.
 * The SDK's requestTimeout alone only logs a warning and waits on; throwOnRequestTimeout makes it fail.
 */
export function boundedRequestHandler(connectMs: number, answerMs: number) {
  return { connectionTimeout: connectMs, requestTimeout: answerMs, throwOnRequestTimeout: true, socketTimeout: answerMs };
}

/**
 * Fails `request` with "no answer within …" unless it is over (answered in full, or failed) within
 * `ms`: a deadline on the whole exchange, which a peer that sends a byte now and then cannot
 * stretch as it can a socket's idle timeout.
 */
export function withDeadline(request: ClientRequest, ms: number): ClientRequest {
  const timer = setTimeout(() => request.destroy(new Error(`no answer within ${ms / 1000} s`)), ms);
  request.once('close', () => clearTimeout(timer));
  return request;
}

/**
 * Runs a call that stops at the signal it is given, which aborts after `ms` (or when `stop` does).
 * When the deadline cut the call off, `timedOut` is what is thrown, rather than the words an SDK
 * gives its cancellation. `ms` is rounded up to whole milliseconds, which AbortSignal.timeout needs.
 */
export async function withinDeadline<T>(ms: number, call: (signal: AbortSignal) => Promise<T>, timedOut: (cause: unknown) => Error, stop?: AbortSignal): Promise<T> {
  const deadline = AbortSignal.timeout(Math.ceil(ms));
  try {
    return await call(stop ? AbortSignal.any([deadline, stop]) : deadline);
  } catch (err) {
    if (deadline.aborted) throw timedOut(err);
    throw err;
  }
}

/** One outbound HTTP(S) call, for `exchange`. */
export interface OutboundRequest {
  method: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /** PEM certificates the server's must chain to, instead of the system's. */
  ca?: string | string[];
  /** The whole exchange (connect, send, answer in full) ends within this, or fails. */
  deadlineMs: number;
  /** An answer longer than this fails the call. */
  maxAnswerBytes?: number;
  /** Ends the call early. */
  signal?: AbortSignal | null;
}

export interface OutboundAnswer {
  status: number;
  statusMessage: string;
  headers: IncomingHttpHeaders;
  /** Names and values in turn, as received. */
  rawHeaders: string[];
  body: Buffer;
}

/**
 * One request over node:http(s) to `url`, answered once the whole body has arrived; no redirect is
 * followed. Fails on a network or TLS error, the deadline, the signal, or an answer over the limit.
 */
export function exchange(url: URL, request: OutboundRequest): Promise<OutboundAnswer> {
  const { body, ca, deadlineMs, maxAnswerBytes = Infinity, signal } = request;
  const headers = { ...request.headers, ...(body !== undefined && { 'content-length': String(Buffer.byteLength(body)) }) };
  const options = { method: request.method, headers, ...(url.protocol === 'https:' && ca && { ca }) };
  return new Promise((resolve, reject) => {
    const answer = (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxAnswerBytes) req.destroy(new Error(`answer larger than ${maxAnswerBytes} bytes`));
        else chunks.push(chunk);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, statusMessage: res.statusMessage ?? '', headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    };
    const req = url.protocol === 'https:' ? httpsRequest(url, options, answer) : httpRequest(url, options, answer);
    withDeadline(req, deadlineMs).on('error', reject);
    if (signal) {
      const abort = () => req.destroy(new Error(`no answer within ${deadlineMs / 1000} s`));
      if (signal.aborted) abort();
      signal.addEventListener('abort', abort, { once: true });
      req.once('close', () => signal.removeEventListener('abort', abort));
    }
    req.end(body);
  });
}
