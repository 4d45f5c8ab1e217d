import type { EngineReply, EngineRequest } from '@svc/engine-host';
import type { Caller, Capability, MountInfo, Operation, Response } from '@svc/framework';
import { errorOf, ServiceError, type ErrorKind } from '@svc/api-contract';
import type { ForwardCall, ForwardedAnswer } from '@svc/replication';
import type { Dispatcher } from '../routing/router';

/**
 * Vault's consistency headers under this service's prefix: the primary's log index a forwarded
 * write was committed at, and, when the answer could not wait for the write to come back, that
 * this secondary has not applied it yet.
 */
export const CONSISTENCY_HEADERS = {
  index: 'X-Service-Index',
  inconsistent: 'X-Service-Inconsistent',
} as const;

/** The value of `X-Service-Inconsistent` on an answer given before its write came back. */
export const NOT_YET_APPLIED = 'write-not-yet-applied';

const OPERATIONS: readonly Operation[] = ['create', 'read', 'update', 'delete', 'list', 'patch'];

/** The forwarding side of a performance secondary: what it needs of replication. */
export type ForwardToPrimary = (call: ForwardCall, body: Record<string, unknown>) => Promise<ForwardedAnswer>;

/** Whether a failure is a write of replicated storage refused on a performance secondary. */
export function isReadOnlyReplicated(failure: unknown): boolean {
  // A thrown ServiceError and an engine's error reply both carry the kind.
  return typeof failure === 'object' && failure !== null && (failure as { kind?: unknown }).kind === 'read-only-replicated';
}

/**
 * A request the secondary authenticated and authorized, as it travels to the primary: the
 * operation, its mount, path and data, and who the caller is (policies, entity, accessor, display
 * name, namespace) — never the token's value, which the primary does not know. Headers and
 * streamed bodies stay behind.
 */
export function encodeForwardedRequest(message: EngineRequest): Record<string, unknown> {
  const caller = message.caller && { ...message.caller, tokenId: undefined };
  return {
    request_id: message.requestId,
    mount: { uuid: message.mount.uuid, namespace: message.mount.namespace },
    operation: message.operation,
    path: message.path,
    data: message.data,
    caller: caller ?? null,
    capabilities: message.capabilities,
    remote_address: message.remoteAddress ?? '',
  };
}

/** The primary's reading of `encodeForwardedRequest`; `mountOf` finds the mount in its own tables. */
export function decodeForwardedRequest(body: Record<string, unknown>, mountOf: (namespace: string, uuid: string) => MountInfo | undefined): EngineRequest {
  const text = (value: unknown, field: string): string => {
    if (typeof value !== 'string') throw ServiceError.badRequest(`forwarded request: ${field} must be a string`);
    return value;
  };
  const object = (value: unknown, field: string): Record<string, unknown> => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw ServiceError.badRequest(`forwarded request: ${field} must be an object`);
    return value as Record<string, unknown>;
  };
  const strings = (value: unknown, field: string): string[] => {
    if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) throw ServiceError.badRequest(`forwarded request: ${field} must be a list of strings`);
    return value as string[];
  };
  const mountRef = object(body.mount, 'mount');
  const namespace = text(mountRef.namespace, 'mount.namespace');
  const mount = mountOf(namespace, text(mountRef.uuid, 'mount.uuid'));
  if (!mount) throw ServiceError.badRequest(`forwarded request: the mount does not exist on the primary (namespace "${namespace}")`);
  const operation = text(body.operation, 'operation') as Operation;
  if (!OPERATIONS.includes(operation)) throw ServiceError.badRequest(`forwarded request: operation "${operation}" is not one that writes`);
  return {
    kind: 'operation',
    requestId: text(body.request_id, 'request_id'),
    mount,
    operation,
    path: text(body.path, 'path'),
    data: object(body.data, 'data'),
    caller: body.caller === null ? undefined : decodeCaller(object(body.caller, 'caller'), strings),
    capabilities: strings(body.capabilities, 'capabilities') as Capability[],
    remoteAddress: text(body.remote_address, 'remote_address') || undefined,
  };
}

function decodeCaller(caller: Record<string, unknown>, strings: (value: unknown, field: string) => string[]): Caller {
  const field = (name: keyof Caller): string => {
    const value = caller[name];
    if (typeof value !== 'string') throw ServiceError.badRequest(`forwarded request: caller.${name} must be a string`);
    return value;
  };
  const meta = caller.meta;
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) throw ServiceError.badRequest('forwarded request: caller.meta must be an object');
  return {
    tokenAccessor: field('tokenAccessor'),
    policies: strings(caller.policies, 'caller.policies'),
    entityId: field('entityId'),
    displayName: field('displayName'),
    namespace: field('namespace'),
    meta: meta as Record<string, string>,
  };
}

/** The engine's reply as the primary sends it back (errors included: they are the write's answer). */
export function encodeForwardedReply(reply: EngineReply): Record<string, unknown> {
  if (!reply.ok) return { ok: false, kind: reply.kind, errors: reply.errors };
  return { ok: true, ...(reply.response ? { response: { ...reply.response, stream: undefined } } : {}) };
}

export function decodeForwardedReply(answer: Record<string, unknown>): EngineReply {
  if (answer.ok === true) return { ok: true, ...(answer.response ? { response: answer.response as Response } : {}) };
  if (answer.ok === false && typeof answer.kind === 'string' && Array.isArray(answer.errors)) return answer as EngineReply;
  throw ServiceError.badGateway('the performance primary answered a forwarded request malformed');
}

/**
 * The request path's dispatcher on a performance secondary: a request is served here, and one
 * that needs to write replicated storage (refused here by the barrier's guard) is sent whole to
 * the primary, whose answer carries the consistency headers. Only writes are ever refused, so
 * reads never leave the secondary.
 */
export function forwardingDispatcher(local: Dispatcher, forward: ForwardToPrimary, isPerformanceSecondary: () => boolean): Dispatcher {
  const forwarded = async (message: EngineRequest): Promise<EngineReply> => {
    const answer = await forward('request', encodeForwardedRequest(message));
    return withConsistency(decodeForwardedReply(answer.answer), message.operation, answer);
  };
  // Every request passes here: elsewhere than on a performance secondary nothing is refused for
  // being replicated, and the local answer is handed back as it is.
  const serve = (message: EngineRequest, run: (message: EngineRequest) => Promise<EngineReply>): Promise<EngineReply> =>
    !isPerformanceSecondary() ? run(message) : run(message).then(
      (reply) => (reply.ok || !isReadOnlyReplicated(reply) || message.kind !== 'operation' || message.body ? reply : forwarded(message)),
      (err: unknown) => {
        if (!isReadOnlyReplicated(err)) throw err;
        if (message.kind !== 'operation' || message.body) return { ok: false as const, kind: 'read-only-replicated' as const, errors: errorOf(err).errors };
        return forwarded(message);
      },
    );
  return {
    dispatch: (message) => serve(message, (m) => local.dispatch(m)),
    handleSystem: (message) => serve(message, (m) => local.handleSystem(m)),
  };
}

/**
 * Runs `write` here; when it needs to write replicated storage, runs it on the primary instead
 * (`call` with `body`) and answers what the primary did, once it has come back here.
 */
export async function writeHereOrOnPrimary<T>(write: () => Promise<T>, forward: ForwardToPrimary | undefined, call: ForwardCall, body: Record<string, unknown>, read: (answer: Record<string, unknown>) => T): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (!forward || !isReadOnlyReplicated(err)) throw err;
    const forwarded = await forward(call, body);
    const reply = forwarded.answer;
    if (reply.ok === false) throw new ServiceError(reply.kind as ErrorKind, reply.errors as string[]);
    return read(reply);
  }
}

/** The forwarded answer with the index it was committed at, and, if it has not come back yet, a warning. */
function withConsistency(reply: EngineReply, operation: Operation, forwarded: ForwardedAnswer): EngineReply {
  if (!reply.ok || (!reply.response && operation === 'read')) return reply;
  const response: Response = reply.response ?? {};
  const headers: Record<string, string> = { ...response.headers, [CONSISTENCY_HEADERS.index]: String(forwarded.index) };
  if (forwarded.consistent) return { ok: true, response: { ...response, headers } };
  headers[CONSISTENCY_HEADERS.inconsistent] = NOT_YET_APPLIED;
  const warning = 'the write was made on the performance primary and has not reached this secondary yet: a read here may not see it';
  return { ok: true, response: { ...response, headers, warnings: [...(response.warnings ?? []), warning] } };
}
