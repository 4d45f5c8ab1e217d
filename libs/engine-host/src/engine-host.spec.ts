import pino from 'pino';
import { Backend } from '@svc/framework';
import { testMount } from '@svc/testing';
import { MemoryLockManager } from '@svc/locks';
import { Barrier, InmemPhysical, Keyring } from '@svc/storage';
import { EngineHost } from './engine-host';
import type { EngineRequest } from './protocol';

const mount = testMount('echo');

/** A tiny engine: `value` stores and reads a value; `admin` needs sudo; `login` is unauthenticated. */
const echo = () =>
  new Backend({
    type: 'echo',
    help: 'test engine',
    paths: [
      {
        pattern: 'value',
        synopsis: 'a value',
        fields: { v: { type: 'string', description: 'the value' } },
        operations: {
          read: async (req) => ({ data: { v: (await req.storage.get('v'))?.toString() ?? null } }),
          update: async (req, f) => {
            await req.storage.put('v', Buffer.from(f.get<string>('v')));
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
    headers: {},
    caller: { tokenAccessor: 'a', policies: ['p'], entityId: '', displayName: 't', namespace: '', meta: {} },
    capabilities: ['read', 'update', 'create'],
    ...extra,
  } as EngineRequest;
}

describe('EngineHost', () => {
  const context = { locks: new MemoryLockManager(), logger: pino({ level: 'silent' }) };

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
});
