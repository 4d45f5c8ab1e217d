import { PassThrough } from 'node:stream';
import pino from 'pino';
import { Backend, type MountInfo } from '@svc/framework';
import { FrameChannel, PluginStorage, type EngineReply, type EngineRequest, type HostFrame, type PluginFrame } from '@svc/engine-host';
import { Barrier, createView, InmemPhysical, Keyring } from '@svc/storage';
import { testMount } from '@svc/testing';
import { servePlugin, type PluginFactory } from './serve';

/**
 * The SDK against the host's side of the protocol over in-memory streams: the host's storage
 * server on a real barrier, so what the plugin writes is checked in the physical store.
 */
function connect(factory: PluginFactory) {
  const physical = new InmemPhysical();
  const barrier = new Barrier(physical);
  barrier.unseal(Keyring.generate());
  const mount: MountInfo = { ...testMount('memo'), uuid: 'u1' };
  const storage = new PluginStorage(createView(barrier, 'logical/u1/'));
  const toPlugin = new PassThrough();
  const fromPlugin = new PassThrough();
  const replies = new Map<number, (reply: EngineReply) => void>();
  let hello: PluginFrame | undefined;
  const host: FrameChannel<PluginFrame, HostFrame> = new FrameChannel<PluginFrame, HostFrame>(
    fromPlugin,
    toPlugin,
    (frame) => {
      if (frame.type === 'hello') hello = frame;
      else if (frame.type === 'reply') replies.get(frame.id)?.(frame.reply);
      else void storage.serve(frame.call).then((result) => host.send({ type: 'storage-result', id: frame.id, result }));
    },
    () => undefined,
  );
  const server = servePlugin(factory, { input: toPlugin, output: fromPlugin, logger: pino({ level: 'silent' }) });
  let nextId = 1;
  const request = (operation: EngineRequest['operation'], path: string, data: Record<string, unknown> = {}) =>
    new Promise<EngineReply>((resolve) => {
      const id = nextId++;
      replies.set(id, resolve);
      host.send({ type: 'request', id, message: { kind: 'operation', requestId: `r${id}`, mount, operation, path, data, capabilities: ['root'], caller: { tokenAccessor: 'a', policies: ['root'], entityId: '', displayName: 'root', namespace: '', meta: {} } } });
    });
  return { physical, request, server, end: () => host.end(), hello: () => hello };
}

const memo: PluginFactory = (_mount, { storage }) =>
  new Backend({
    type: 'memo',
    help: 'memos',
    paths: [
      {
        pattern: 'memo/:name',
        synopsis: 'a memo',
        fields: { text: { type: 'string', required: true, description: 'text' }, fail: { type: 'bool', description: 'roll back' } },
        operations: {
          update: async (_req, f) => {
            await storage.transaction(async (tx) => {
              await tx.lock(f.params.name);
              await tx.put(f.params.name, Buffer.from(f.get<string>('text')));
              if (f.get('fail')) throw new Error('undo');
            });
            return undefined;
          },
          read: async (_req, f) => {
            const text = await storage.get(f.params.name);
            return text ? { data: { text: text.toString() } } : undefined;
          },
        },
      },
    ],
  });

describe('servePlugin', () => {
  it('says hello, answers requests, and keeps its data in the host barrier (encrypted)', async () => {
    const plugin = connect(memo);
    expect(await plugin.request('update', 'memo/a', { text: 'plain-memo-text' })).toEqual({ ok: true });
    expect(plugin.hello()).toEqual({ type: 'hello', protocol: 1 });
    expect(await plugin.request('read', 'memo/a')).toEqual({ ok: true, response: { data: { text: 'plain-memo-text' } } });
    const stored = await plugin.physical.get('logical/u1/a');
    expect(stored).not.toBeNull();
    expect(stored!.toString('latin1')).not.toContain('plain-memo-text');
  });

  it('rolls a transaction back when the handler throws, and answers a framework error as the engine host does', async () => {
    const plugin = connect(memo);
    const failed = await plugin.request('update', 'memo/b', { text: 'never', fail: true });
    expect(failed).toEqual({ ok: false, kind: 'internal', errors: ['internal error'] });
    expect(await plugin.physical.get('logical/u1/b')).toBeNull();
    expect(await plugin.request('update', 'memo/b', {})).toEqual({ ok: false, kind: 'bad-request', errors: ['missing required field "text"'] });
    expect(await plugin.request('read', 'nothing')).toEqual({ ok: false, kind: 'unsupported-path', errors: ['unsupported path'] });
  });

  it('cleans its backend up when the host closes the channel', async () => {
    let cleaned = false;
    const plugin = connect((mount, context) => {
      const backend = memo(mount, context);
      return new Backend({ ...backend.declaration, cleanup: async () => void (cleaned = true) });
    });
    await plugin.request('read', 'memo/a');
    plugin.end();
    await plugin.server.closed;
    expect(cleaned).toBe(true);
  });
});
