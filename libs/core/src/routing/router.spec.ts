import pino from 'pino';
import { BusHandlerError, decodeJson, encodeJson, MemoryBus } from '@svc/bus';
import { EngineHost, EngineRegistry, GATEWAY, serviceQueue, serviceSubject, type EngineReply, type EngineRequest } from '@svc/engine-host';
import { Backend, type Caller, type MountInfo, type Operation } from '@svc/framework';
import { MemoryLockManager } from '@svc/locks';
import { DEFAULT_TELEMETRY, Metrics, type Timer } from '@svc/metrics';
import type { Barrier } from '@svc/storage';
import { refusal, unsealedBarrier } from '@svc/testing';
import { SYSTEM_MOUNT } from '../mounts/system-mount';
import type { Namespace } from '../namespaces/namespace';
import { NamespaceRegistry } from '../namespaces/registry';
import { Router, type OperationHandler } from './router';

const PREFIX = 'test';
/** A service in another process, reached over the bus. */
const REMOTE = 'crypto';
/** A service running in this process (all-in-one). */
const LOCAL = 'secrets';
const DEFAULTS = { default_lease_ttl: 0, max_lease_ttl: 0 };

/** A backend that says who served it, with one path open to callers without a token. */
function answering(servedBy: string, openPath: string): Backend {
  return new Backend({
    type: servedBy,
    help: `Served by ${servedBy}.`,
    paths: [
      { pattern: openPath, synopsis: 'Open.', operations: { update: { summary: 'Open.', unauthenticated: true, handler: async () => ({ data: { servedBy } }) } } },
      { pattern: 'closed', synopsis: 'Needs a token.', operations: { read: { summary: 'Read.', handler: async (req) => ({ data: { servedBy, path: req.path } }) } } },
    ],
  });
}

/** Another place an operation can go: it records what it was sent and says who it is. */
class RecordingHandler implements OperationHandler {
  readonly received: EngineRequest[] = [];
  constructor(private readonly name: string) {}
  async handle(message: EngineRequest): Promise<EngineReply> {
    this.received.push(message);
    return { ok: true, response: { data: { servedBy: this.name } } };
  }
}

interface Fixture {
  router: Router;
  barrier: Barrier;
  bus: MemoryBus;
  namespaces: NamespaceRegistry;
  team: Namespace;
  plugins: RecordingHandler;
  localService: RecordingHandler;
  busRequests: Timer;
  /** Mounts in the root namespace, by type. */
  mounts: Record<'userpass' | 'kv' | 'transit' | 'plugin', MountInfo>;
}

async function fixture(): Promise<Fixture> {
  const barrier = unsealedBarrier();
  const namespaces = new NamespaceRegistry(barrier);
  await namespaces.load('1');
  const team = await namespaces.create(namespaces.root, 'team', {});
  const { root } = namespaces;
  const mounts = {
    userpass: await root.authMounts.mount({ path: 'userpass', type: 'userpass' }, DEFAULTS),
    kv: await root.secretMounts.mount({ path: 'kv', type: 'kv' }, DEFAULTS),
    transit: await root.secretMounts.mount({ path: 'transit', type: 'transit' }, DEFAULTS),
    plugin: await root.secretMounts.mount({ path: 'custom', type: 'custom-plugin', external: true }, DEFAULTS),
  };

  const engines = new EngineRegistry([
    { type: 'system', table: 'secret', runsIn: GATEWAY, builtin: true, factory: () => answering('system', 'seal-status') },
    { type: 'userpass', table: 'auth', runsIn: GATEWAY, factory: () => answering('gateway', 'login/:name') },
    { type: 'kv', table: 'secret', runsIn: LOCAL, factory: () => answering(LOCAL, 'open') },
    { type: 'transit', table: 'secret', runsIn: REMOTE, factory: () => answering(REMOTE, 'open') },
  ]);
  const coreEngines = new EngineHost(GATEWAY, engines.factoriesFor(GATEWAY), barrier, { locks: new MemoryLockManager(), logger: pino({ level: 'silent' }) }, false);
  coreEngines.register(SYSTEM_MOUNT, answering('system', 'seal-status'));
  const plugins = new RecordingHandler('plugin');
  const localService = new RecordingHandler(LOCAL);
  const bus = new MemoryBus();
  const busRequests = new Metrics({ ...DEFAULT_TELEMETRY, disableHostname: true }).timer('bus.request', 'Engine service requests', ['service']);
  const router = new Router({
    namespaces,
    engines,
    coreEngines,
    plugins,
    localServices: new Map([[LOCAL, localService]]),
    barrier,
    bus,
    subjectPrefix: PREFIX,
    requestTimeoutMs: 5_000,
    busRequests,
  });
  return { router, barrier, bus, namespaces, team, plugins, localService, busRequests, mounts };
}

const CALLER: Caller = { tokenAccessor: 'accessor-1', policies: ['default'], entityId: '', displayName: 'token', namespace: '', meta: {} };

function operation(mount: MountInfo, path: string, operation: Operation = 'read'): EngineRequest {
  return { kind: 'operation', requestId: `request-${path}`, mount, path, operation, data: {}, caller: CALLER, capabilities: ['read', 'update'] };
}

/** The remote service: each request it receives is recorded and answered by `reply` (in order, the last one repeated). */
function serveRemote(bus: MemoryBus, ...replies: EngineReply[]): EngineRequest[] {
  const received: EngineRequest[] = [];
  bus.serve(serviceSubject(REMOTE, PREFIX), serviceQueue(REMOTE, PREFIX), async (msg) => {
    received.push(decodeJson<EngineRequest>(msg.payload));
    return { payload: encodeJson(replies[Math.min(received.length, replies.length) - 1]), headers: {} };
  });
  return received;
}

const SEALED: EngineReply = { ok: false, kind: 'sealed', errors: ['service crypto is sealed'] };
const SERVED: EngineReply = { ok: true, response: { data: { servedBy: REMOTE } } };

describe('Router', () => {
  let f: Fixture;

  beforeEach(async () => {
    f = await fixture();
  });

  afterEach(async () => {
    f.router.stop();
    await f.bus.close();
  });

  describe('where a path goes', () => {
    it('splits a full path into its namespace, the path inside it and the mount serving it', () => {
      const inTeam = f.router.route('team/cubbyhole/notes');
      expect(inTeam.namespace).toBe(f.team);
      expect(inTeam.path).toBe('cubbyhole/notes');
      expect(inTeam.route).toMatchObject({ path: 'notes', table: f.team.secretMounts, mount: { path: 'cubbyhole/', namespace: 'team/' } });

      const login = f.router.route('auth/userpass/login/alice');
      expect(login.namespace).toBe(f.namespaces.root);
      expect(login.route).toMatchObject({ path: 'login/alice', table: f.namespaces.root.authMounts, mount: { uuid: f.mounts.userpass.uuid } });
    });

    it('finds no mount for a path nothing is mounted at', () => {
      const routed = f.router.route('nowhere/x');
      expect(routed.namespace).toBe(f.namespaces.root);
      expect(routed.path).toBe('nowhere/x');
      expect(routed.route).toBeUndefined();
    });

    it("answers a request's namespace, and 404 naming one that no longer exists", async () => {
      expect(f.router.namespaceOf({ mount: { ...f.mounts.kv, namespace: 'team/' } })).toBe(f.team);
      expect(f.router.namespaceOf({ mount: f.mounts.kv })).toBe(f.namespaces.root);
      expect(await refusal(Promise.resolve().then(() => f.router.namespaceOf({ mount: { ...f.mounts.kv, namespace: 'gone/' } })))).toEqual({
        status: 404,
        message: 'namespace "gone/" does not exist',
      });
    });

    it('finds a mount by uuid, sys/ as the namespace its system mount, and nothing elsewhere', () => {
      expect(f.router.mountByUuid('', f.mounts.userpass.uuid)).toEqual(f.mounts.userpass);
      expect(f.router.mountByUuid('', f.mounts.transit.uuid)).toEqual(f.mounts.transit);
      expect(f.router.mountByUuid('team/', SYSTEM_MOUNT.uuid)).toEqual({ ...SYSTEM_MOUNT, namespace: 'team/' });
      // A mount of the root namespace is not one of team/'s.
      expect(f.router.mountByUuid('team/', f.mounts.kv.uuid)).toBeUndefined();
      expect(f.router.mountByUuid('gone/', SYSTEM_MOUNT.uuid)).toBeUndefined();
    });
  });

  describe('dispatch', () => {
    it("sends an operation on a gateway mount to the gateway's own engines", async () => {
      expect(await f.router.dispatch(operation(f.mounts.userpass, 'closed'))).toEqual({ ok: true, response: { data: { servedBy: 'gateway', path: 'closed' } } });
      expect(await f.router.handleSystem(operation(SYSTEM_MOUNT, 'closed'))).toEqual({ ok: true, response: { data: { servedBy: 'system', path: 'closed' } } });
    });

    it('sends one to a service of this process without the bus', async () => {
      const message = operation(f.mounts.kv, 'data/x');
      expect(await f.router.dispatch(message)).toEqual({ ok: true, response: { data: { servedBy: LOCAL } } });
      expect(f.localService.received).toEqual([message]);
      expect(f.busRequests.series(LOCAL).count).toBe(0);
    });

    it("sends one on a plugin's mount to the plugin host, whatever its type", async () => {
      const message = operation(f.mounts.plugin, 'anything');
      expect(await f.router.dispatch(message)).toEqual({ ok: true, response: { data: { servedBy: 'plugin' } } });
      expect(f.plugins.received).toEqual([message]);
    });

    it('refuses a mount type no engine serves', async () => {
      expect(await refusal(f.router.dispatch(operation({ ...f.mounts.kv, type: 'retired' }, 'x')))).toEqual({ status: 400, message: 'unsupported mount type "retired"' });
    });

    it('sends one to a remote service over the bus, on its subject, and times the round trip', async () => {
      const received = serveRemote(f.bus, SERVED);
      const message = operation(f.mounts.transit, 'encrypt/key', 'update');
      expect(await f.router.dispatch(message)).toEqual(SERVED);
      expect(received).toEqual([message]);
      expect(f.busRequests.series(REMOTE)).toMatchObject({ count: 1, failures: 0 });
    });

    it('tells a remote service when the mount is read-only here (a replicated mount of a secondary)', async () => {
      const received = serveRemote(f.bus, SERVED);
      f.barrier.setWriteGuard((key) => !key.startsWith(`logical/${f.mounts.transit.uuid}/`));
      await f.router.dispatch(operation(f.mounts.transit, 'encrypt/key', 'update'));
      expect(received[0].replicatedReadOnly).toBe(true);
    });

    it('asks again while a remote service answers "sealed" just after an unseal, then answers what it says', async () => {
      const received = serveRemote(f.bus, SEALED, SEALED, SERVED);
      expect(await f.router.dispatch(operation(f.mounts.transit, 'keys/'))).toEqual(SERVED);
      expect(received).toHaveLength(3);
    });

    it('answers "sealed" at once while this gateway is sealed itself', async () => {
      const received = serveRemote(f.bus, SEALED, SERVED);
      f.barrier.seal();
      expect(await f.router.dispatch(operation(f.mounts.transit, 'keys/'))).toEqual(SEALED);
      expect(received).toHaveLength(1);
    });

    it('answers 503 naming a remote service that does not answer, and counts the failure', async () => {
      expect(await refusal(f.router.dispatch(operation(f.mounts.transit, 'keys/')))).toEqual({ status: 503, message: `service "${REMOTE}" is unavailable (no-responders)` });
      expect(f.busRequests.series(REMOTE)).toMatchObject({ count: 1, failures: 1 });
    });

    it("passes on a remote service's own failure as it is", async () => {
      f.bus.serve(serviceSubject(REMOTE, PREFIX), serviceQueue(REMOTE, PREFIX), async () => {
        throw new Error('handler broke');
      });
      const failure = await f.router.dispatch(operation(f.mounts.transit, 'keys/')).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(BusHandlerError);
      expect((failure as BusHandlerError).message).toContain('handler broke');
    });
  });

  describe('who may call without a token', () => {
    it('runs in this process only for gateway mount types', () => {
      expect(f.router.isCoreEngine(f.mounts.userpass)).toBe(true);
      expect(f.router.isCoreEngine(SYSTEM_MOUNT)).toBe(true);
      expect(f.router.isCoreEngine(f.mounts.kv)).toBe(false);
      expect(f.router.isCoreEngine(f.mounts.transit)).toBe(false);
      expect(f.router.isCoreEngine({ ...f.mounts.kv, type: 'retired' })).toBe(false);
    });

    it("takes a login for an unauthenticated operation of a gateway auth method, never its help", () => {
      expect(f.router.isLogin(f.mounts.userpass, 'login/alice', 'update')).toBe(true);
      expect(f.router.isLogin(f.mounts.userpass, 'login/alice', 'help')).toBe(false);
      expect(f.router.isLogin(f.mounts.userpass, 'closed', 'read')).toBe(false);
    });

    it('asks a backend of another process for its declaration once per mount and options, then answers from it', async () => {
      const received = serveRemote(f.bus, { ok: true, logins: answering(REMOTE, 'login/:role').logins() });
      expect(await f.router.isLogin(f.mounts.transit, 'login/web', 'update')).toBe(true);
      // Known from now on: answered at once, as for a backend of this process.
      expect(f.router.isLogin(f.mounts.transit, 'login/web', 'read')).toBe(false);
      expect(f.router.isLogin(f.mounts.transit, 'closed', 'read')).toBe(false);
      expect(f.router.isLogin(f.mounts.transit, 'login/web', 'help')).toBe(false);
      expect(received.map(({ kind, mount }) => [kind, mount.uuid])).toEqual([['logins', f.mounts.transit.uuid]]);
      // A tune of its options builds the backend anew, which may declare otherwise.
      expect(await f.router.isLogin({ ...f.mounts.transit, options: { version: '2' } }, 'login/web', 'update')).toBe(true);
      expect(received).toHaveLength(2);
    });

    it("asks a plugin through the plugin host, and asks again after a failed fetch", async () => {
      expect(await f.router.isLogin(f.mounts.plugin, 'anything', 'update')).toBe(false);
      expect(f.plugins.received.map(({ kind }) => kind)).toEqual(['logins']);
      expect(await refusal(Promise.resolve(f.router.isLogin(f.mounts.transit, 'login/web', 'update')))).toEqual({ status: 503, message: 'service "crypto" is unavailable (no-responders)' });
      serveRemote(f.bus, { ok: true, logins: answering(REMOTE, 'login/:role').logins() });
      expect(await f.router.isLogin(f.mounts.transit, 'login/web', 'update')).toBe(true);
    });

    it('knows the unauthenticated sys/ operations', () => {
      expect(f.router.isUnauthenticatedSystem('seal-status', 'update')).toBe(true);
      expect(f.router.isUnauthenticatedSystem('seal-status', 'help')).toBe(false);
      expect(f.router.isUnauthenticatedSystem('closed', 'read')).toBe(false);
    });
  });

  it('derives a message from a request: its id, caller and capabilities, nothing of its data', () => {
    const base = f.router.baseMessage({ requestId: 'r1', operation: 'update', path: 'p', data: { secret: 1 }, mount: f.mounts.kv, caller: CALLER, capabilities: new Set(['update', 'sudo']) });
    expect(base).toEqual({ requestId: 'r1', data: {}, caller: CALLER, capabilities: ['update', 'sudo'] });
  });
});
