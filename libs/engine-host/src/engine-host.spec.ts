import pino from 'pino';
import { MemoryBus, MemoryBusHub } from '@svc/bus';
import { Backend, type MountInfo } from '@svc/framework';
import { testMount } from '@svc/testing';
import { MemoryLockManager } from '@svc/locks';
import { Barrier, InmemPhysical, Keyring } from '@svc/storage';
import { ServiceError } from '@svc/api-contract';
import { EngineHost, writableOutsideReadOnlyRequests } from './engine-host';
import type { EngineRequest } from './protocol';
import type { BackendFactory } from './registry';

const mount = testMount('echo');

/** A tiny engine: `value` stores and reads a value; `admin` needs sudo; `login` is unauthenticated. */
const echo: BackendFactory = (_mount, { storage }) =>
  new Backend({
    type: 'echo',
    help: 'test engine',
    paths: [
      {
        pattern: 'value',
        synopsis: 'a value',
        fields: { v: { type: 'string', description: 'the value' } },
        operations: {
          read: async () => ({ data: { v: (await storage.get('v'))?.toString() ?? null } }),
          update: async (_req, f) => {
            await storage.put('v', Buffer.from(f.get<string>('v')));
            return undefined;
          },
        },
      },
      { pattern: 'admin', synopsis: 'sudo only', operations: { read: { summary: 'admin', sudo: true, handler: async () => ({ data: { ok: true } }) } } },
      { pattern: 'broken', synopsis: 'fails', operations: { read: async () => { throw new TypeError('holds the secret s3cr3t'); } } },
      { pattern: 'login', synopsis: 'open', operations: { update: { summary: 'login', unauthenticated: true, handler: async () => ({ data: { ok: true } }) } } },
    ],
  });

function message(operation: EngineRequest['operation'], path: string, extra: Partial<EngineRequest> = {}): EngineRequest {
  return {
    kind: 'operation',
    requestId: 'r',
    mount,
    operation,
    path,
    data: {},
    caller: { tokenAccessor: 'a', policies: ['p'], entityId: '', displayName: 't', namespace: '', meta: {} },
    capabilities: ['read', 'update', 'create'],
    ...extra,
  } as EngineRequest;
}

describe('EngineHost', () => {
  const context = { locks: new MemoryLockManager(), logger: pino({ level: 'silent' }) };

  it('refuses the writes of a request marked replicatedReadOnly (the gateway forwards it), and only of that request', async () => {
    const barrier = new Barrier(new InmemPhysical());
    barrier.setWriteGuard(writableOutsideReadOnlyRequests);
    barrier.unseal(Keyring.generate());
    const host = new EngineHost('echo-service', { echo }, barrier, context);
    const write = (v: string, replicatedReadOnly?: boolean) => host.handle(message('update', 'value', { data: { v }, replicatedReadOnly }));
    expect(await write('first')).toEqual({ ok: true });
    expect(await write('on the secondary', true)).toMatchObject({ ok: false, kind: 'read-only-replicated' });
    // A read marked so is served; the refused write left nothing, and a later unmarked one writes.
    expect(await host.handle(message('read', 'value', { replicatedReadOnly: true }))).toEqual({ ok: true, response: { data: { v: 'first' } } });
    expect(await write('second')).toEqual({ ok: true });
    expect(writableOutsideReadOnlyRequests()).toBe(true);
  });

  it('answers 503 naming the service while it holds no keyring, and serves once it does', async () => {
    const barrier = new Barrier(new InmemPhysical());
    const host = new EngineHost('echo-service', { echo }, barrier, context);
    expect(await host.handle(message('read', 'value'))).toEqual({ ok: false, kind: 'sealed', errors: ['service echo-service is sealed'] });
    barrier.unseal(Keyring.generate());
    expect((await host.handle(message('update', 'value', { data: { v: 'x' } }))).ok).toBe(true);
    expect(await host.handle(message('read', 'value'))).toEqual({ ok: true, response: { data: { v: 'x' } } });
    barrier.seal();
    expect(await host.handle(message('read', 'value'))).toMatchObject({ ok: false, kind: 'sealed' });
  });

  it('enforces sudo, callers and unauthenticated markings for every engine', async () => {
    const barrier = new Barrier(new InmemPhysical());
    barrier.unseal(Keyring.generate());
    const host = new EngineHost('echo-service', { echo }, barrier, context);
    expect(await host.handle(message('read', 'admin'))).toMatchObject({ ok: false, kind: 'permission-denied' });
    expect(await host.handle(message('read', 'admin', { capabilities: ['read', 'sudo'] }))).toMatchObject({ ok: true });
    expect(await host.handle(message('read', 'value', { caller: undefined }))).toMatchObject({ ok: false, kind: 'permission-denied' });
    expect(await host.handle(message('update', 'login', { caller: undefined, capabilities: [] }))).toMatchObject({ ok: true });
  });

  it('answers an unexpected failure 500 and logs it at error level with class and stack, never the message', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const barrier = new Barrier(new InmemPhysical());
    barrier.unseal(Keyring.generate());
    const host = new EngineHost('echo-service', { echo }, barrier, { ...context, logger });
    expect(await host.handle(message('read', 'broken'))).toEqual({ ok: false, kind: 'internal', errors: ['internal error'] });
    expect(lines).toHaveLength(1);
    const entry = JSON.parse(lines[0]) as { level: number; request_id: string; err: { type: string; stack: string } };
    expect(entry).toMatchObject({ level: 50, request_id: 'r', err: { type: 'TypeError' } });
    expect(entry.err.stack).toMatch(/engine-host\.spec/);
    expect(lines[0]).not.toContain('s3cr3t');
  });

  it('keeps each mount in its own storage prefix', async () => {
    const physical = new InmemPhysical();
    const barrier = new Barrier(physical);
    barrier.unseal(Keyring.generate());
    const host = new EngineHost('echo-service', { echo }, barrier, context);
    await host.handle(message('update', 'value', { data: { v: 'one' } }));
    expect(await physical.list('')).toEqual(['logical/']);
    expect(await physical.list('logical/')).toEqual([`${mount.uuid}/`]);
  });

  describe('lifecycle', () => {
    /** An engine that records its hooks: `value` reads what initialize loaded. */
    function recording(options: { failInitializeOnce?: boolean; onInvalidate?: () => void } = {}) {
      const events: string[] = [];
      let failures = options.failInitializeOnce ? 1 : 0;
      let built = 0;
      const factory: BackendFactory = (mount, { storage }) => {
        const id = ++built;
        let loaded = '';
        return new Backend({
          type: 'echo',
          help: 'records its lifecycle',
          paths: [{ pattern: 'value', synopsis: 'the value loaded at initialize', operations: { read: async () => ({ data: { v: loaded, backend: id } }) } }],
          initialize: async () => {
            events.push(`initialize ${id} ${mount.options.flavour ?? ''}`.trim());
            if (failures-- > 0) throw ServiceError.badRequest('not ready yet');
            loaded = (await storage.get('v'))?.toString() ?? '';
          },
          invalidate: (key) => {
            events.push(`invalidate ${id} ${key}`);
            options.onInvalidate?.();
          },
          cleanup: async () => {
            events.push(`cleanup ${id}`);
          },
        });
      };
      return { events, factory };
    }

    function unsealed(physical = new InmemPhysical(), keyring = Keyring.generate()): Barrier {
      const barrier = new Barrier(physical);
      barrier.unseal(keyring);
      return barrier;
    }

    it('initializes a backend once, before its first request, with its mount storage already readable', async () => {
      const { events, factory } = recording();
      const barrier = unsealed();
      await barrier.put(`logical/${mount.uuid}/v`, Buffer.from('stored'));
      const host = new EngineHost('echo-service', { echo: factory }, barrier, context);
      const replies = await Promise.all([host.handle(message('read', 'value')), host.handle(message('read', 'value'))]);
      expect(replies).toEqual([
        { ok: true, response: { data: { v: 'stored', backend: 1 } } },
        { ok: true, response: { data: { v: 'stored', backend: 1 } } },
      ]);
      expect(events).toEqual(['initialize 1']);
    });

    it('answers a failed initialize to its request and tries again with a new backend on the next', async () => {
      const { events, factory } = recording({ failInitializeOnce: true });
      const host = new EngineHost('echo-service', { echo: factory }, unsealed(), context);
      expect(await host.handle(message('read', 'value'))).toEqual({ ok: false, kind: 'bad-request', errors: ['not ready yet'] });
      expect(await host.handle(message('read', 'value'))).toMatchObject({ ok: true, response: { data: { backend: 2 } } });
      expect(events).toEqual(['initialize 1', 'cleanup 1', 'initialize 2']);
    });

    it('builds the backend anew when the mount\'s options change, and cleans up the old one', async () => {
      const { events, factory } = recording();
      const host = new EngineHost('echo-service', { echo: factory }, unsealed(), context);
      const tuned: MountInfo = { ...mount, options: { flavour: 'b' } };
      await host.handle(message('read', 'value'));
      await host.handle(message('read', 'value', { mount: { ...mount, options: {} } }));
      // sys/mounts shows a mount without options as null; a message built from it is the same mount.
      await host.handle(message('read', 'value', { mount: { ...mount, options: null as unknown as MountInfo['options'] } }));
      expect(await host.handle(message('read', 'value', { mount: tuned }))).toMatchObject({ ok: true, response: { data: { backend: 2 } } });
      expect(events).toEqual(['initialize 1', 'cleanup 1', 'initialize 2 b']);
    });

    it('cleans up a disabled mount\'s backend, and every backend when the process stops', async () => {
      const { events, factory } = recording();
      const host = new EngineHost('echo-service', { echo: factory }, unsealed(), context);
      const other = testMount('echo');
      await host.handle(message('read', 'value'));
      await host.handle(message('read', 'value', { mount: other }));
      host.forget(mount.uuid);
      await host.closeAll();
      expect(events).toEqual(['initialize 1', 'initialize 2', 'cleanup 1', 'cleanup 2']);
    });

    it('hands each mount\'s backend the keys of its own storage that changed, relative to the mount', async () => {
      const { events, factory } = recording();
      const host = new EngineHost('echo-service', { echo: factory }, unsealed(), context);
      await host.handle(message('read', 'value'));
      host.invalidate([`logical/${mount.uuid}/policy/k`, 'logical/another-mount/x', 'core/mounts', `logical/${mount.uuid}`]);
      expect(events).toEqual(['initialize 1', 'invalidate 1 policy/k']);
    });

    it('tells the other replicas of its service which mount keys it wrote, and not itself', async () => {
      const hub = new MemoryBusHub();
      const physical = new InmemPhysical();
      const keyring = Keyring.generate();
      let invalidated!: () => void;
      const received = new Promise<void>((resolve) => (invalidated = resolve));
      const writer = recording();
      const reader = recording({ onInvalidate: () => invalidated() });
      const writerBarrier = unsealed(physical, keyring);
      const writerHost = new EngineHost('echo-service', { echo: writer.factory }, writerBarrier, context);
      const readerHost = new EngineHost('echo-service', { echo: reader.factory }, unsealed(physical, keyring), context);
      const buses = [new MemoryBus({ hub }), new MemoryBus({ hub })];
      const subscriptions = [writerHost.follow(buses[0], 'lifecycle'), readerHost.follow(buses[1], 'lifecycle')];
      await readerHost.handle(message('read', 'value'));
      await writerHost.handle(message('read', 'value'));
      // The recording engine has no write path: the writer's replica writes to its mount storage as its backend would.
      await writerBarrier.put(`logical/${mount.uuid}/v`, Buffer.from('new'));
      await received;
      expect(reader.events).toEqual(['initialize 1', 'invalidate 1 v']);
      expect(writer.events).toEqual(['initialize 1']);
      subscriptions.forEach((subscription) => subscription.unsubscribe());
      await Promise.all(buses.map((bus) => bus.close()));
    });
  });
});
