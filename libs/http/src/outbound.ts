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
