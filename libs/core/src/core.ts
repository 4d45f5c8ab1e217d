import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Bus } from '@svc/bus';
import { BusUnavailableError, decodeJson, encodeJson } from '@svc/bus';
import type { ServerConfig } from '@svc/config';
import { EngineHost, mountStoragePrefix, serviceSubject, type EngineReply, type EngineRequest, type OperationFields, type BackendFactory } from '@svc/engine-host';
import type { Backend, Request } from '@svc/framework';
import { ServiceError, SEALED_MESSAGE, UNINITIALIZED_MESSAGE } from '@svc/http';
import type { LockManager } from '@svc/locks';
import { KeyringDistributor, KeyringReceiver, ShamirSeal, encryptRootToken } from '@svc/seal';
import { Barrier, createView, type Keyring, type Physical, type StorageView } from '@svc/storage';
import type { EngineRegistry } from './engines';
import { SYSTEM_MOUNT } from './mounts/system-mount';
import { describeRequestError } from './http/request-errors';
import { ReplicaSync } from './cluster/replica-sync';
import { BUILD_DATE, VERSION } from './version';
import { MountTable, type MountEntry } from './mounts/mount-table';
import { TokenStore, nowSeconds } from './tokens/token-store';

const PERIODIC_INTERVAL_MS = 60_000;
const MOUNTS_KEY = 'core/mounts';
const AUTH_MOUNTS_KEY = 'core/auth';
/** Not a barrier key: marks a keyring rotation for the replicas. */
const KEYRING_CHANGED = 'core/keyring';

/** Storage keys whose contents gateway replicas cache in memory. */
function isCachedKey(key: string): boolean {
  return key === MOUNTS_KEY || key === AUTH_MOUNTS_KEY || key === KEYRING_CHANGED;
}

export type CoreState = 'uninitialized' | 'sealed' | 'unsealed';

export interface CoreOptions {
  config: ServerConfig;
  physical: Physical;
  bus: Bus;
  locks: LockManager;
  logger: Logger;
  engines: EngineRegistry;
  /** Engine services running in this process (all-in-one): reached without serialization. */
  localServices: Map<string, EngineHost>;
  /** Builds the sys/ backend; given the core so its handlers can drive it. */
  systemBackend: (core: Core) => Backend;
  /** Version of the kv engine mounted at secret/ on first unseal (dev mode uses 2). */
  defaultKvVersion?: '1' | '2';
}

export interface InitRequest {
  secret_shares: number;
  secret_threshold: number;
  pgp_keys?: string[];
  root_token_pgp_key?: string;
  /** Dev mode only: the root token's value (`-dev-root-token-id`). */
  rootTokenId?: string;
}

export interface Route {
  mount: MountEntry;
  table: MountTable;
  /** Path below the mount. */
  path: string;
}

/**
 * The gateway's core: seal state, barrier, mount tables and token store, and the dispatcher that
 * hands an operation to the engine owning the mount (in process or over the bus).
 */
export class Core {
  readonly seal: ShamirSeal;
  readonly barrier: Barrier;
  readonly system: Backend;
  readonly secretMounts: MountTable;
  readonly authMounts: MountTable;
  readonly tokens: TokenStore;
  private readonly coreEngines: EngineHost;
  private readonly distributor: KeyringDistributor;
  /** Replicas share storage and one keyring: a peer's unseal (or seal) reaches this one too. */
  private readonly peers: KeyringReceiver;
  /** Keeps the caches of gateway replicas in step with writes made through any of them. */
  readonly replicas: ReplicaSync;
  private initialized = false;
  /** Identity of this cluster, created on first unseal. */
  clusterName = '';
  clusterId = '';
  activeSince?: Date;
  private readonly migrations = new Map<string, Record<string, string>>();
  private periodic?: NodeJS.Timeout;
  private peerTransitions: Promise<void> = Promise.resolve();

  constructor(readonly options: CoreOptions) {
    this.seal = new ShamirSeal(options.physical, { version: VERSION, buildDate: BUILD_DATE });
    this.barrier = new Barrier(options.physical);
    const coreView = createView(this.barrier, 'core/');
    this.secretMounts = new MountTable(coreView, 'mounts', 'secret', '');
    this.authMounts = new MountTable(coreView, 'auth', 'auth', '');
    this.tokens = new TokenStore(createView(this.barrier, 'sys/token/'));
    this.coreEngines = new EngineHost('gateway', coreFactories(options.engines), this.barrier, { locks: options.locks, logger: options.logger }, false);
    const subjectPrefix = options.config.bus?.subjectPrefix;
    this.distributor = new KeyringDistributor(options.bus, { subjectPrefix });
    this.peers = new KeyringReceiver(options.bus, {
      subjectPrefix,
      onError: (err) => this.logger.warn({ err: describeRequestError(err) }, 'keyring request from peer failed'),
    });
    this.replicas = new ReplicaSync(options.bus, subjectPrefix ?? 'svc', isCachedKey, (keys) => this.reloadCaches(keys));
    this.barrier.onWrite((event) => this.replicas.noteWrite(event.key));
    this.system = options.systemBackend(this);
    this.coreEngines.register(SYSTEM_MOUNT, this.system);
  }

  get config(): ServerConfig {
    return this.options.config;
  }

  get logger(): Logger {
    return this.options.logger;
  }

  get state(): CoreState {
    if (!this.initialized) return 'uninitialized';
    return this.barrier.sealed ? 'sealed' : 'unsealed';
  }

  async start(): Promise<void> {
    await this.options.physical.open();
    this.initialized = (await this.seal.status()).initialized;
    this.peers.onChange((keyring) => {
      // Applied in order, one at a time; a failure is logged, the next announcement retries.
      this.peerTransitions = this.peerTransitions
        .then(() => this.followPeers(keyring))
        .catch((err: unknown) => this.logger.warn({ err: describeRequestError(err) }, 'following a peer seal change failed'));
    });
    await this.peers.start();
    this.replicas.start();
  }

  /**
   * A peer rotated the keyring. This replica stops serving its now stale keyring, then asks the
   * others until one with the new term answers (stale peers may still answer for a moment).
   */
  private async fetchRotatedKeyring(): Promise<void> {
    const term = this.barrier.keyring.activeTerm;
    this.distributor.close();
    for (let attempt = 0; attempt < 20 && !this.barrier.sealed && this.barrier.keyring.activeTerm <= term; attempt++) {
      await this.peers.refresh();
      await this.peerTransitions;
    }
    if (!this.barrier.sealed) await this.distributor.publish(this.barrier.keyring);
  }

  /** Another replica changed cached state: read it again. */
  private async reloadCaches(keys: string[]): Promise<void> {
    if (this.barrier.sealed) return;
    if (keys.includes(KEYRING_CHANGED)) await this.fetchRotatedKeyring();
    if (keys.includes(MOUNTS_KEY)) await this.secretMounts.load();
    if (keys.includes(AUTH_MOUNTS_KEY)) await this.authMounts.load();
  }

  async stop(): Promise<void> {
    clearInterval(this.periodic);
    this.replicas.stop();
    this.peers.close();
    this.distributor.close();
    await this.options.physical.close();
  }

  private async followPeers(keyring: Keyring | undefined): Promise<void> {
    if (keyring && this.barrier.sealed) {
      this.initialized = true;
      await this.unsealWith(keyring);
    } else if (keyring && keyring.activeTerm > this.barrier.keyring.activeTerm) {
      this.barrier.unseal(keyring); // a peer rotated: new writes use the new term here too
      await this.distributor.publish(keyring);
    } else if (!keyring && !this.barrier.sealed) {
      await this.sealLocally();
    }
  }

  /** sys/init: creates the seal, the keyring and the root token. */
  async initialize(req: InitRequest): Promise<{ keys: string[]; keys_base64: string[]; root_token: string }> {
    if (this.initialized) throw ServiceError.badRequest('Service is already initialized');
    const result = await this.seal.initialize(req);
    this.initialized = true;
    // Unsealed only long enough to write the root token and default mounts; peers are not told.
    await this.unsealWith(result.keyring, false);
    const root = await this.createRootToken(req.rootTokenId);
    await this.sealLocally();
    const rootToken = req.root_token_pgp_key ? await encryptRootToken(req.root_token_pgp_key, root) : root;
    return { keys: result.keys, keys_base64: result.keys_base64, root_token: rootToken };
  }

  /** sys/unseal: one share at a time; the last one unseals. */
  async submitUnsealKey(key: string | undefined, reset: boolean): Promise<void> {
    if (!this.initialized) throw new ServiceError(501, [UNINITIALIZED_MESSAGE]);
    if (!this.barrier.sealed) return;
    const outcome = await this.seal.submitUnsealKey(key ?? '', reset);
    if (outcome.keyring) await this.unsealWith(outcome.keyring);
  }

  /** Opens the barrier and loads cached state; `announce` hands the keyring to services and peers. */
  async unsealWith(keyring: Keyring, announce = true): Promise<void> {
    this.barrier.unseal(keyring);
    await this.tokens.load();
    await this.secretMounts.load();
    await this.authMounts.load();
    if (this.secretMounts.size === 0) await this.createDefaultMounts();
    await this.loadClusterIdentity();
    this.activeSince = new Date();
    if (!announce) return;
    this.periodic ??= setInterval(() => void this.runPeriodicFunctions(), PERIODIC_INTERVAL_MS).unref();
    await this.distributor.publish(keyring);
    this.logger.info({ term: keyring.activeTerm }, 'unsealed');
  }

  /** Seals this process and every process holding the keyring. */
  async sealNow(): Promise<void> {
    await this.sealLocally();
    await this.distributor.seal();
  }

  private async sealLocally(): Promise<void> {
    clearInterval(this.periodic);
    this.periodic = undefined;
    this.distributor.close(); // a sealed replica must not hand out its old keyring
    await this.seal.seal();
    this.barrier.seal();
    this.logger.info('sealed');
  }

  /** sys/rotate: a new keyring term for new writes; old terms stay for reading. */
  async rotateKeyring(): Promise<Keyring> {
    const next = this.barrier.keyring.rotate();
    await this.seal.persistKeyring(next);
    this.barrier.unseal(next);
    await this.distributor.publish(next);
    // Replicas fetch the new term before this call returns (the pipeline flushes).
    this.replicas.noteWrite(KEYRING_CHANGED);
    return next;
  }

  async createRootToken(id?: string): Promise<string> {
    const now = nowSeconds();
    const { id: token } = await this.tokens.create(
      {
        parent: '',
        policies: ['root'],
        meta: null,
        displayName: 'root',
        numUses: 0,
        creationTime: now,
        lastRenewalTime: now,
        ttl: 0,
        explicitMaxTtl: 0,
        period: 0,
        renewable: false,
        type: 'service',
        namespace: '',
        role: '',
        path: 'auth/token/root',
        entityId: '',
      },
      id,
    );
    return token;
  }

  /** Longest-prefix match of a path (relative to the namespace) against the mount tables. */
  route(path: string): Route | undefined {
    const table = path.startsWith('auth/') ? this.authMounts : this.secretMounts;
    const inTable = table === this.authMounts ? path.slice('auth/'.length) : path;
    const mount = table.match(inTable);
    if (!mount) return undefined;
    return { mount, table, path: inTable.slice(mount.path.length) };
  }

  /** Sends an operation to the engine that owns the mount type. */
  async dispatch(message: EngineRequest): Promise<EngineReply> {
    const definition = this.options.engines.get(message.mount.type);
    if (!definition) throw ServiceError.badRequest(`unsupported mount type "${message.mount.type}"`);
    if (definition.kind === 'core') return this.coreEngines.handle(message);
    const local = this.options.localServices.get(definition.service);
    if (local) return local.handle(message);
    try {
      const reply = await this.options.bus.request(serviceSubject(definition.service, this.config.bus?.subjectPrefix), encodeJson(message), {
        headers: { 'svc-request-id': message.requestId },
      });
      return decodeJson<EngineReply>(reply.payload);
    } catch (err) {
      if (err instanceof BusUnavailableError) {
        throw ServiceError.unavailable(`service "${definition.service}" is unavailable (${err.reason})`);
      }
      throw err;
    }
  }

  /** Every mount with the path prefix of its table ("" or "auth/"). */
  allMounts(): { mount: MountEntry; prefix: string }[] {
    return [
      ...this.secretMounts.list().map((mount) => ({ mount, prefix: '' })),
      ...this.authMounts.list().map((mount) => ({ mount, prefix: 'auth/' })),
    ];
  }

  /** The identity fields of a message derived from another request (same caller and id). */
  baseMessage(req: Request): Omit<OperationFields, 'mount' | 'path' | 'operation'> {
    return {
      requestId: req.requestId,
      data: {},
      headers: {},
      caller: req.caller,
      capabilities: [...req.capabilities],
    };
  }

  /** sys/ requests, which are served in every seal state (the pipeline decides which). */
  handleSystem(message: EngineRequest): Promise<EngineReply> {
    return this.coreEngines.handle(message);
  }

  /** Another gateway replica may have initialized the shared storage since we last looked. */
  async refreshInitialized(): Promise<CoreState> {
    if (!this.initialized) this.initialized = (await this.seal.status()).initialized;
    return this.state;
  }

  /** Deletes everything a disabled mount stored. */
  async purgeMountData(entry: MountEntry): Promise<void> {
    this.coreEngines.forget(entry.uuid);
    await deleteTree(createView(this.barrier, mountStoragePrefix(entry)), '');
  }

  /** Remounts complete synchronously; the id lets clients poll as Vault's API expects. */
  newMigrationId(from: string, to: string): string {
    const id = randomUUID();
    this.migrations.set(id, { source_mount: from, target_mount: to, status: 'success' });
    return id;
  }

  migration(id: string): Record<string, string> | undefined {
    return this.migrations.get(id);
  }

  assertUnsealed(): void {
    if (!this.initialized) throw new ServiceError(501, [UNINITIALIZED_MESSAGE]);
    if (this.barrier.sealed) throw ServiceError.unavailable(SEALED_MESSAGE);
  }

  /**
   * Calls every mount's periodic function (rotations, tidy), as Vault's core does once a minute.
   * The lock makes exactly one gateway replica do it; a mount's failure does not stop the others.
   */
  async runPeriodicFunctions(): Promise<void> {
    await this.options.locks.withLock('core-periodic', PERIODIC_INTERVAL_MS, async () => {
      for (const { mount } of this.allMounts()) {
        if (mount.type === 'system' || !this.options.engines.get(mount.type)) continue;
        const reply = await this.dispatch({
          kind: 'periodic',
          requestId: randomUUID(),
          mount,
          path: '',
          operation: 'update',
          data: {},
          headers: {},
          capabilities: ['root'],
        }).catch((err: unknown) => ({ ok: false as const, status: 500, errors: [describeRequestError(err).type] }));
        if (!reply.ok) this.logger.warn({ mount: mount.path, status: reply.status, errors: reply.errors }, 'periodic function failed');
      }
    });
  }

  private async loadClusterIdentity(): Promise<void> {
    const view = createView(this.barrier, 'core/');
    let identity = await view.getJSON<{ name: string; id: string }>('cluster');
    if (!identity) {
      const id = randomUUID();
      identity = { name: `svc-cluster-${id.slice(0, 8)}`, id };
      await view.putJSON('cluster', identity);
    }
    this.clusterName = identity.name;
    this.clusterId = identity.id;
  }

  private async createDefaultMounts(): Promise<void> {
    const kvVersion = this.options.defaultKvVersion ?? '1';
    await this.secretMounts.ensure({ path: 'sys/', type: 'system', description: 'system endpoints used for control, policy and debugging' });
    await this.secretMounts.ensure({
      path: 'secret/',
      type: 'kv',
      description: 'key/value secret storage',
      options: { version: kvVersion },
    });
    await this.authMounts.ensure({ path: 'token/', type: 'token', description: 'token based credentials' });
  }
}

function coreFactories(engines: EngineRegistry): Record<string, BackendFactory> {
  const out: Record<string, BackendFactory> = {};
  for (const table of ['secret', 'auth'] as const) {
    for (const type of engines.types(table)) {
      const definition = engines.get(type)!;
      if (definition.kind === 'core') out[type] = definition.create;
    }
  }
  return out;
}

async function deleteTree(view: StorageView, prefix: string): Promise<void> {
  for (const key of await view.list(prefix)) {
    if (key.endsWith('/')) await deleteTree(view, prefix + key);
    else await view.delete(prefix + key);
  }
}
