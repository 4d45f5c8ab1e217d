import type { ClientRequest } from 'node:http';

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
