import { BusHandlerError, BusMessage, BusUnavailableError } from './types';

/** Marks a reply as a handler failure; the payload is then the error message (UTF-8). */
export const ERROR_HEADER = 'svc-error';
/** The gateway's request id, carried to the services so their logs can name it. */
export const REQUEST_ID_HEADER = 'svc-request-id';

/** Marks a relayed reply saying the process that was asked went away before answering. */
export const NO_RESPONDERS_HEADER = 'svc-no-responders';

export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

/** The timeout to use: `requested` when given (validated), else `fallback`. */
export function requestTimeout(requested: number | undefined, fallback: number): number {
  if (requested === undefined) return fallback;
  if (!Number.isFinite(requested) || requested <= 0) {
    throw new Error(`bus request timeout must be a positive number of milliseconds, got ${requested}`);
  }
  return requested;
}

/** Runs a serve handler and turns a throw into an error reply. Only the message travels, never
 * the stack, so a service cannot leak its internals to callers. */
export async function answer(
  handler: (msg: BusMessage) => Promise<BusMessage>,
  msg: BusMessage,
): Promise<BusMessage> {
  try {
    const reply = await handler(msg);
    return { payload: reply.payload, headers: withoutErrorMarker(reply.headers) };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { payload: utf8.encode(message), headers: { [ERROR_HEADER]: '1' } };
  }
}

/** The reply as the requester sees it: the message itself, or a BusHandlerError for an error reply. */
export function readReply(subject: string, reply: BusMessage): BusMessage {
  if (NO_RESPONDERS_HEADER in reply.headers) throw new BusUnavailableError(subject, 'no-responders');
  if (ERROR_HEADER in reply.headers) {
    throw new BusHandlerError(subject, utf8Decoder.decode(reply.payload));
  }
  return reply;
}

/** Runs a broadcast listener. Its failure is its own: it must neither stop delivery to other
 * listeners nor surface as an unhandled rejection that would bring the process down. */
export function notifyListener(listener: (msg: BusMessage) => void, msg: BusMessage): void {
  try {
    const result: unknown = listener(msg);
    if (result instanceof Promise) result.catch(() => undefined);
  } catch {
    // see above: a listener's failure is not the bus's
  }
}

function withoutErrorMarker(headers: Record<string, string>): Record<string, string> {
  if (!(ERROR_HEADER in headers)) return headers;
  const { [ERROR_HEADER]: _reserved, ...rest } = headers;
  return rest;
}
