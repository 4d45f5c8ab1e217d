import { Test } from '@nestjs/testing';
import pino from 'pino';
import { MemoryBus, MemoryBusHub, decodeJson, encodeJson } from '@svc/bus';
import { EngineHost, servicePresenceSubject, serviceSubject, type EngineReply, type EngineRequest } from '@svc/engine-host';
import { Backend } from '@svc/framework';
import { MemoryLockManager } from '@svc/locks';
import { Barrier, Keyring, type TransactionalStore } from '@svc/storage';
import { BusTransport, ENGINE_HOST, EngineController } from './engine-microservice';

const PREFIX = 'nest-module-spec';

/**
 * A one-path engine: `ping` answers the number it was sent. It keeps nothing, so its barrier has no
 * physical storage behind it (this spec is compiled as an ES module, where the in-memory storage's
 * CommonJS B-tree does not load as it does everywhere else).
 */
function pingHost(): EngineHost {
  const barrier = new Barrier({} as TransactionalStore);
  barrier.unseal(Keyring.generate());
  const ping = () =>
    new Backend({
      type: 'ping',
      help: 'answers pings',
      paths: [{ pattern: 'ping', synopsis: 'ping', fields: { n: { type: 'int', description: 'a number' } }, operations: { update: async (_req, f) => ({ data: { pong: f.get('n') } }) } }],
    });
  return new EngineHost('pinger', { ping }, barrier, { locks: new MemoryLockManager(), logger: pino({ level: 'silent' }) });
}

const request: EngineRequest = {
  kind: 'operation',
  requestId: 'r-1',
  // Written out: @svc/testing's helpers do not load into an ES-module spec (they find files by __dirname).
  mount: { path: 'ping/', type: 'ping', uuid: 'ping-mount', accessor: 'ping_1', namespace: '', description: '', config: { default_lease_ttl: 0, max_lease_ttl: 0 }, options: {}, local: false, seal_wrap: false },
  operation: 'update',
  path: 'ping',
  data: { n: 7 },
  caller: { tokenAccessor: 'a', policies: ['root'], entityId: '', displayName: 't', namespace: '', meta: {} },
  capabilities: ['root'],
};

describe('an engine service as a Nest microservice on the bus transport', () => {
  it('answers engine requests on its subject through the controller and its presence subject, until it is closed', async () => {
    const moduleRef = await Test.createTestingModule({ controllers: [EngineController], providers: [{ provide: ENGINE_HOST, useValue: pingHost() }] }).compile();
    const hub = new MemoryBusHub();
    const [serviceBus, gatewayBus] = [new MemoryBus({ hub }), new MemoryBus({ hub })];
    const transport = new BusTransport(PREFIX);
    transport.connect(serviceBus, 'pinger');
    const app = moduleRef.createNestMicroservice({ strategy: transport, logger: false });
    await app.listen();

    const reply = await gatewayBus.request(serviceSubject('pinger', PREFIX), encodeJson(request));
    expect(decodeJson<EngineReply>(reply.payload)).toEqual({ ok: true, response: { data: { pong: 7 } } });
    expect((await gatewayBus.request(servicePresenceSubject('pinger', PREFIX), new Uint8Array())).payload).toHaveLength(0);

    await app.close();
    await expect(gatewayBus.request(serviceSubject('pinger', PREFIX), encodeJson(request))).rejects.toMatchObject({ reason: 'no-responders' });
    await Promise.all([serviceBus.close(), gatewayBus.close()]);
  });
});
