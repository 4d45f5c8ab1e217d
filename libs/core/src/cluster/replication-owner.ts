import { BusUnavailableError, decodeJson, encodeJson, type Bus, type Subscription } from '@svc/bus';
import { errorOf, ServiceError, type ErrorKind } from '@svc/api-contract';
import { FORWARD_WAIT_MS, type SendToOwner } from '@svc/replication';

/**
 * The calls of `OWNER_CALLS` between the processes of one cluster: the process that owns its
 * replication (the replication service, or an all-in-one server's first worker) serves them to
 * the others over the bus.
 */
const subject = (prefix: string) => `${prefix}.replication.owner`;

/**
 * Longer than the slowest call: a forwarded write waits for the primary, then up to
 * FORWARD_WAIT_MS for its entry to come back; a reindex or merkle-check reads the whole store.
 */
const OWNER_CALL_TIMEOUT_MS = FORWARD_WAIT_MS + 110_000;

type OwnerAnswer = { ok: true; result: unknown } | { ok: false; kind: ErrorKind; errors: string[] };

/** Sends calls to the owner; its ServiceErrors come back as they were thrown there. */
export function replicationOwnerClient(bus: Bus, subjectPrefix: string): SendToOwner {
  return async (call, args) => {
    let answer: OwnerAnswer;
    try {
      const reply = await bus.request(subject(subjectPrefix), encodeJson({ call, args }), { timeoutMs: OWNER_CALL_TIMEOUT_MS });
      answer = decodeJson<OwnerAnswer>(reply.payload);
    } catch (err) {
      if (err instanceof BusUnavailableError) {
        throw ServiceError.unavailable(`the process that runs this cluster's replication (the replication service) did not answer: ${err.reason}`);
      }
      throw err;
    }
    if (!answer.ok) throw new ServiceError(answer.kind, answer.errors);
    return answer.result;
  };
}

/** Serves the calls on the owner; a failure is answered as its ServiceError (an unexpected one as an internal error). */
export function serveReplicationOwnerCalls(bus: Bus, subjectPrefix: string, serve: (call: unknown, args: unknown) => Promise<unknown>): Subscription {
  return bus.serve(subject(subjectPrefix), 'replication-owner', async (message) => {
    let answer: OwnerAnswer;
    try {
      const { call, args } = decodeJson<{ call?: unknown; args?: unknown }>(message.payload);
      answer = { ok: true, result: (await serve(call, args)) ?? null };
    } catch (err) {
      answer = { ok: false, ...errorOf(err) };
    }
    return { payload: encodeJson(answer), headers: {} };
  });
}
