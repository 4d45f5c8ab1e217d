import type { EngineReply, EngineRequest } from '@svc/engine-host';
import { ReadOnlyReplicatedStorageError, ServiceError } from '@svc/api-contract';
import type { ForwardedAnswer } from '@svc/replication';
import { testMount } from '@svc/testing';
import {
  CONSISTENCY_HEADERS,
  decodeForwardedReply,
  decodeForwardedRequest,
  encodeForwardedReply,
  encodeForwardedRequest,
  forwardingDispatcher,
  NOT_YET_APPLIED,
  writeHereOrOnPrimary,
} from './forwarding';
import type { Dispatcher } from '../routing/router';

const mount = testMount('kv');

const request: EngineRequest = {
  kind: 'operation',
  requestId: 'req-1',
  mount,
  operation: 'update',
  path: 'app/config',
  data: { value: 'v' },
  caller: { tokenAccessor: 'acc-1', tokenId: 'hvs.secret-token-value', policies: ['default', 'writer'], entityId: 'ent-1', displayName: 'userpass-alice', namespace: '', meta: { username: 'alice' } },
  capabilities: ['update', 'create'],
  remoteAddress: '10.0.0.7',
};

const mountOf = (namespace: string, uuid: string) => (namespace === '' && uuid === mount.uuid ? mount : undefined);
const readOnly: EngineReply = { ok: false, kind: 'read-only-replicated', errors: ['replicated storage is read-only'] };

describe('forwarded request codec', () => {
  it('carries the operation and the caller without the token value', () => {
    const wire = JSON.parse(JSON.stringify(encodeForwardedRequest(request))) as Record<string, unknown>;
    expect(JSON.stringify(wire)).not.toContain('secret-token-value');
    expect(decodeForwardedRequest(wire, mountOf)).toEqual({
      ...request,
      caller: { tokenAccessor: 'acc-1', policies: ['default', 'writer'], entityId: 'ent-1', displayName: 'userpass-alice', namespace: '', meta: { username: 'alice' } },
    });
  });

  it('resolves the mount in the primary\'s own tables and refuses one it lacks', () => {
    const wire = encodeForwardedRequest({ ...request, mount: { ...mount, uuid: 'gone' } });
    expect(() => decodeForwardedRequest(wire, mountOf)).toThrow(/the mount does not exist on the primary/);
  });

  it('names the field that is malformed', () => {
    const wire = encodeForwardedRequest(request);
    expect(() => decodeForwardedRequest({ ...wire, path: 7 }, mountOf)).toThrow('forwarded request: path must be a string');
    expect(() => decodeForwardedRequest({ ...wire, operation: 'help' }, mountOf)).toThrow(/operation "help"/);
    expect(() => decodeForwardedRequest({ ...wire, caller: { ...(wire.caller as object), policies: 'root' } }, mountOf)).toThrow('forwarded request: caller.policies must be a list of strings');
    expect(() => decodeForwardedRequest({ ...wire, data: [] }, mountOf)).toThrow('forwarded request: data must be an object');
  });

  it('carries replies, errors included, and refuses a malformed one', () => {
    const ok: EngineReply = { ok: true, response: { data: { a: 1 }, warnings: ['w'] } };
    expect(decodeForwardedReply(JSON.parse(JSON.stringify(encodeForwardedReply(ok))) as Record<string, unknown>)).toEqual(ok);
    const denied: EngineReply = { ok: false, kind: 'bad-request', errors: ['missing field "policy"'] };
    expect(decodeForwardedReply(encodeForwardedReply(denied))).toEqual(denied);
    expect(decodeForwardedReply(encodeForwardedReply({ ok: true }))).toEqual({ ok: true });
    expect(() => decodeForwardedReply({ ok: 'maybe' })).toThrow(/malformed/);
  });
});

describe('forwardingDispatcher', () => {
  function setup(local: (message: EngineRequest) => Promise<EngineReply>, answer: Partial<ForwardedAnswer> = {}, secondary = true) {
    const forwarded: Record<string, unknown>[] = [];
    const inner: Dispatcher = { dispatch: local, handleSystem: local };
    const dispatcher = forwardingDispatcher(
      inner,
      async (call, body) => {
        forwarded.push({ call, ...body });
        return { answer: encodeForwardedReply({ ok: true, response: { data: { written: true } } }), index: 42, consistent: true, ...answer };
      },
      () => secondary,
    );
    return { dispatcher, forwarded };
  }

  it('answers locally when the engine could serve the request', async () => {
    const { dispatcher, forwarded } = setup(async () => ({ ok: true, response: { data: { read: 1 } } }));
    expect(await dispatcher.dispatch(request)).toEqual({ ok: true, response: { data: { read: 1 } } });
    expect(forwarded).toEqual([]);
  });

  it('forwards a request refused as a replicated write, and answers with the index it was committed at', async () => {
    const { dispatcher, forwarded } = setup(async () => readOnly);
    const reply = await dispatcher.dispatch(request);
    expect(reply).toEqual({ ok: true, response: { data: { written: true }, headers: { [CONSISTENCY_HEADERS.index]: '42' } } });
    expect(forwarded).toEqual([{ call: 'request', ...encodeForwardedRequest(request) }]);
  });

  it('forwards a thrown read-only error (a core engine) the same way', async () => {
    const { dispatcher } = setup(() => Promise.reject(new ReadOnlyReplicatedStorageError()));
    expect(await dispatcher.handleSystem(request)).toMatchObject({ ok: true, response: { headers: { [CONSISTENCY_HEADERS.index]: '42' } } });
  });

  it('says when the write has not come back yet', async () => {
    const { dispatcher } = setup(async () => readOnly, { consistent: false, answer: encodeForwardedReply({ ok: true }) });
    const reply = await dispatcher.dispatch(request);
    expect(reply).toEqual({
      ok: true,
      response: { headers: { [CONSISTENCY_HEADERS.index]: '42', [CONSISTENCY_HEADERS.inconsistent]: NOT_YET_APPLIED }, warnings: [expect.stringMatching(/has not reached this secondary yet/)] },
    });
  });

  it('passes the primary\'s refusal through, and never forwards other failures', async () => {
    const refusal: EngineReply = { ok: false, kind: 'bad-request', errors: ['bad'] };
    expect(await setup(async () => readOnly, { answer: encodeForwardedReply(refusal) }).dispatcher.dispatch(request)).toEqual(refusal);
    const other = setup(async () => ({ ok: false, kind: 'permission-denied', errors: ['permission denied'] }));
    expect(await other.dispatcher.dispatch(request)).toMatchObject({ kind: 'permission-denied' });
    expect(other.forwarded).toEqual([]);
    const thrown = setup(() => Promise.reject(ServiceError.badRequest('nope')));
    await expect(thrown.dispatcher.dispatch(request)).rejects.toThrow('nope');
  });

  it('forwards nothing where this cluster is no performance secondary: the local answer is the answer', async () => {
    const { dispatcher, forwarded } = setup(async () => readOnly, {}, false);
    expect(await dispatcher.dispatch(request)).toBe(readOnly);
    expect(forwarded).toEqual([]);
  });
});

describe('writeHereOrOnPrimary', () => {
  const forward = (answer: Record<string, unknown>) => async () => ({ answer, index: 3, consistent: true });

  it('writes here when it can, on the primary when the write is replicated', async () => {
    expect(await writeHereOrOnPrimary(async () => 'here', forward({ ok: true, value: 'there' }), 'login-entity', {}, (answer) => String(answer.value))).toBe('here');
    const refused = () => Promise.reject(new ReadOnlyReplicatedStorageError());
    expect(await writeHereOrOnPrimary(refused, forward({ ok: true, value: 'there' }), 'login-entity', {}, (answer) => String(answer.value))).toBe('there');
    await expect(writeHereOrOnPrimary(refused, forward({ ok: false, kind: 'permission-denied', errors: ['entity disabled'] }), 'login-entity', {}, String)).rejects.toMatchObject({ kind: 'permission-denied', errors: ['entity disabled'] });
    await expect(writeHereOrOnPrimary(refused, undefined, 'login-entity', {}, String)).rejects.toBeInstanceOf(ReadOnlyReplicatedStorageError);
  });
});
