import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { Bus, Subscription } from '@svc/bus';
import { BusUnavailableError, decodeJson, encodeJson } from '@svc/bus';
import type { ServerConfig } from '@svc/config';
import { EngineHost, EngineRegistry, GATEWAY, mountInvalidationSubject, mountOfKey, mountRemovedSubject, mountStoragePrefix, serviceSubject, type EngineReply, type EngineRequest, type EngineType, type MountInvalidation, type OperationFields } from '@svc/engine-host';
import type { Backend, MountInfo, Operation, Request } from '@svc/framework';
import { ServiceError, envelope, errorOf } from '@svc/http';
import type { Metrics, Timer } from '@svc/metrics';
import type { Lock, LockManager } from '@svc/locks';
import {
  AwsKmsKeyWrapper,
  GenerateRoot,
  KeyringDistributor,
  KeyringReceiver,
  MIGRATE_REQUIRED,
  MIGRATE_UNEXPECTED,
  Pkcs11KeyWrapper,
  Rekey,
  SEAL_STORAGE_KEYS,
  SealUnavailableError,
  TransitKeyWrapper,
  createConfiguredSeal,
  encryptRootToken,
  type RootKeyWrapper,
  type Seal,
  type UnsealShares,
} from '@svc/seal';
import { REPLICATION_STORAGE_PREFIX, Replication, type ForwardCall, type MountRef } from '@svc/replication';
import { DEFAULT_SHIPPER_LIMITS } from '@svc/replication-log';
import { createSnapshot, openSnapshot, type SnapshotFile } from '@svc/snapshot';
import { Barrier, CachedPhysical, createView, readJson, refuseUnfinishedMigration, writeJson, type Keyring, type Physical, type StorageView } from '@svc/storage';
import { SYSTEM_MOUNT } from './mounts/system-mount';
import { describeRequestError } from './http/request-errors';
import { ReplicaSync, type ReplicaSyncHooks } from './cluster/replica-sync';
import { StoreFollower } from './cluster/store-follower';
import { replicationOwnerClient, serveReplicationOwnerCalls } from './cluster/replication-owner';
import { ServiceWatch } from './cluster/service-watch';
import { BUILD_DATE, VERSION } from '@svc/http';
import { isMountTableKey, type MountEntry } from './mounts/mount-table';
import { Namespace, type Route } from './namespaces/namespace';
import { NAMESPACES_KEY, NamespaceRegistry } from './namespaces/registry';
import { SERVICE_TOKEN_LENGTH, TokenStore, nowSeconds } from './tokens/token-store';
import { TokenManager, type TokenLimits } from './tokens/token-manager';
import { createTokenBackend } from './tokens/token-paths';
import { createCubbyholeBackend } from './cubbyhole/cubbyhole-backend';
import { createIdentityBackend } from './identity/identity-backend';
import { IdentityStore, namespaceIdentity } from './identity/identity-store';
import { ExpirationManager, LEASE_KEY_PREFIX } from './leases/expiration';
import { LeaseLifecycle } from './leases/lease-lifecycle';
import { Authorizer } from './access/authorizer';
import { ResponseWrapper } from './wrapping/response-wrapper';
import { AUDIT_TABLE_KEY, AuditDevices } from './audit/audit-devices';
import { Logins } from './auth/logins';
import { Plugins } from './plugins/plugins';
import { RequestHandler } from './request/request-handler';
import { decodeForwardedRequest, encodeForwardedReply, forwardingDispatcher } from './request/forwarding';

const PERIODIC_INTERVAL_MS = 60_000;
/** Barrier key of when the cluster's last pass of the periodic functions started, whichever replica ran it. */
const PERIODIC_PASS_KEY = 'core/periodic-pass';
/** A replica's timer may fire a moment before a minute has passed since another replica's pass: it still runs the next one. */
const PERIODIC_TIMER_SLACK_MS = 1_000;
/** The lease whose holder, among the replication services of a cluster, owns its replication. */
const REPLICATION_LEASE = 'replication-owner';
/** How long the lease outlives its holder's last renewal: a standby takes over within it. */
const REPLICATION_LEASE_TTL_MS = 10_000;
const REPLICATION_LEASE_CHECK_MS = 2_000;
const SERVICE_UNSEAL_RETRIES = 40;
const SERVICE_UNSEAL_RETRY_MS = 50;
const POLICY_PREFIX = 'sys/policy/';
/** Not a barrier key: marks a keyring rotation for the replicas. */
const KEYRING_CHANGED = 'core/keyring';
/** How many times a sealed replica asks its peers for the keyring when following an unseal. */
const PEER_UNSEAL_ATTEMPTS = 3;
/** Not a storage key: tells sealed replicas that a client unsealed a peer, so they follow before the call returns. */
const PEER_UNSEALED = 'core/unsealed';
/** Physical key counting cluster-wide seals, so a replica that missed one while cut off learns of it. */
const SEAL_GENERATION_KEY = 'core/seal-generation';
/** Not a storage key: tells the replicas that a snapshot replaced the whole storage. */
const STORAGE_RESTORED = 'core/snapshot-restored';
/**
 * What a restore of this installation's own snapshot leaves as it is: the seal's entries (so the
 * unseal keys and keyring in force stay in force; the keyring only grows, so it reads every
 * snapshot of this installation) and the seal generation.
 */
const KEPT_ON_RESTORE: ReadonlySet<string> = new Set([...Object.values(SEAL_STORAGE_KEYS), SEAL_GENERATION_KEY]);
const FOREIGN_SNAPSHOT =
  'could not verify hash file, possibly the snapshot is using a different set of unseal keys; use the snapshot-force API to bypass this check';
/** Barrier prefix of the statuses of mount moves (sys/remount/status), by migration id. */
const MOUNT_MOVES_PREFIX = 'core/mount-moves/';
const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Barrier key of the last global plugin reload: the mounts whose backends every gateway replica drops. */
const PLUGIN_RELOAD_KEY = 'core/plugin-reload';

/** Storage keys whose contents gateway replicas cache in memory. */
function isCachedKey(key: string): boolean {
  const inNamespace = key.replace(/^namespaces\/[^/]+\//, '');
  return (
    key === KEYRING_CHANGED ||
    key === PEER_UNSEALED ||
    key === SEAL_GENERATION_KEY ||
    key === STORAGE_RESTORED ||
    key === NAMESPACES_KEY ||
    key === AUDIT_TABLE_KEY ||
    key === PLUGIN_RELOAD_KEY ||
    key.startsWith(TokenStore.ENTRY_PREFIX) ||
    key.startsWith(LEASE_KEY_PREFIX) ||
    isMountTableKey(inNamespace) ||
    inNamespace.startsWith(POLICY_PREFIX) ||
    key.startsWith(REPLICATION_STORAGE_PREFIX)
  );
}

/** How long a service whose seal provider could not be reached waits before asking again. */
const AUTO_UNSEAL_RETRY_MS = 2_000;

/** The body of `sys/init`: unseal shares (Shamir) or recovery shares (auto-unseal), and the root token. */
export interface InitAnswer {
  keys: string[];
  keys_base64: string[];
  recovery_keys?: string[];
  recovery_keys_base64?: string[];
  root_token: string;
}

export type CoreState = 'uninitialized' | 'sealed' | 'unsealed';

export interface CoreOptions {
  config: ServerConfig;
  physical: Physical;
  bus: Bus;
  locks: LockManager;
  logger: Logger;
  /** The mount types of this build besides the core's own (system, token, cubbyhole). */
  engineTypes: readonly EngineType[];
  /** Engine services running in this process (all-in-one): reached without serialization. */
  localServices: Map<string, EngineHost>;
  /** Builds the sys/ backend; given the core so its handlers can drive it. */
  systemBackend: (core: Core) => Backend;
  /** The database engine's built-in plugins, listed by sys/plugins/catalog. */
  databasePlugins?: readonly { name: string; version: string }[];
  /** Version of the kv engine mounted at secret/ on first unseal (dev mode uses 2). */
  defaultKvVersion?: '1' | '2';
  /** This process's metrics (sys/metrics). */
  metrics: Metrics;
  /** Where unseal shares are collected until the threshold: a gateway worker's primary; this process by default. */
  unsealShares?: UnsealShares;
  /**
   * Whether this process owns its cluster's replication (the cluster listener, the log and Merkle
   * index, the link to a primary); default true. False in the gateways of the distributed
   * topology, whose replication service owns it, and in the gateway workers after the first: they
   * send what needs the owner to it over the bus. `lease`: the replication service, which owns it
   * while it holds the cluster's replication lease; another one stands by and takes over when
   * the lease lapses.
   */
  replicationOwner?: boolean | 'lease';
}

export interface InitRequest {
  secret_shares?: number;
  secret_threshold?: number;
  pgp_keys?: string[];
  recovery_shares?: number;
  recovery_threshold?: number;
  recovery_pgp_keys?: string[];
  root_token_pgp_key?: string;
  /** Dev mode only: the root token's value (`-dev-root-token-id`). */
  rootTokenId?: string;
}


/**
 * The gateway's core: seal state, barrier, mount tables and token store, and the dispatcher that
 * hands an operation to the engine owning the mount (in process or over the bus).
 */
export class Core {
  readonly seal: Seal;
  readonly barrier: Barrier;
  private readonly storageCache?: CachedPhysical;
  readonly system: Backend;
  readonly namespaces: NamespaceRegistry;
  readonly tokens: TokenStore;
  readonly tokenManager: TokenManager;
  readonly logins: Logins;
  readonly leases: ExpirationManager;
  readonly leaseLifecycle: LeaseLifecycle;
  readonly authorizer: Authorizer;
  readonly wrapping: ResponseWrapper;
  readonly audit: AuditDevices;
  /** sys/rekey/* on a Shamir seal, sys/rekey-recovery-key/* on an auto-unseal seal. */
  private readonly keysRekey: Rekey;
  /** sys/rekey/* on an auto-unseal seal: recovery shares rotate the root key. */
  private readonly rootKeyRekey?: Rekey;
  readonly generateRoot: GenerateRoot;
  /** DR operation tokens: the root generation's mechanism, handing out a DR operation token. */
  readonly drOperationToken: GenerateRoot;
  /** Performance and DR replication: state, activation, the cluster listener and heartbeats. */
  readonly replication: Replication;
  /** The API addresses this gateway serves (URLs), set once its listeners are bound. */
  apiAddresses: string[] = [];
  /** Every mount type: where it runs, which table it belongs to, how its backend is built. */
  readonly engines: EngineRegistry;
  private readonly coreEngines: EngineHost;
  /** The plugin catalogs, and the external plugins this gateway runs for its mounts. */
  readonly plugins: Plugins;
  private readonly distributor: KeyringDistributor;
  /** Replicas share storage and one keyring: a peer's unseal (or seal) reaches this one too. */
  private readonly peers: KeyringReceiver;
  /** A sealed replica's check, on a request, that no peer has unsealed meanwhile. */
  private catchingUp?: Promise<void>;
  /** Keeps the caches of gateway replicas in step with writes made through any of them. */
  readonly replicas: ReplicaSync | StoreFollower;
  private readonly services: ServiceWatch;
  /** On the owner of the cluster's replication: the other processes' calls to it. */
  private replicationOwnerCalls?: Subscription;
  /** A replication service's lease on the cluster's replication, while it holds it. */
  private replicationLease?: Lock;
  private replicationLeaseTimer?: NodeJS.Timeout;
  /** Lease checks run one at a time. */
  private replicationLeaseCheck: Promise<void> = Promise.resolve();
  /** Round trips to engine services over the bus. */
  private readonly busRequests: Timer;
  private initialized = false;
  /** Set once an unseal has loaded the cached state: the barrier opens first, so it can be read. */
  private opened = false;
  /** Identity of this cluster, created on first unseal. */
  clusterName = '';
  clusterId = '';
  activeSince?: Date;
  private periodic?: NodeJS.Timeout;
  private peerTransitions: Promise<void> = Promise.resolve();
  /** The seal generation when this replica unsealed. */
  private unsealedInGeneration = 0;
  /** Set while an auto-unseal seal's provider could not be reached at start and another try is due. */
  private autoUnsealRetry?: NodeJS.Timeout;
  private stopping = false;

  constructor(readonly options: CoreOptions) {
    const { seal, disabledSeal } = options.config;
    this.seal = createConfiguredSeal(options.physical, { version: VERSION, buildDate: BUILD_DATE }, this.sealProvider(seal), disabledSeal && this.sealProvider(disabledSeal), options.unsealShares);
    // Gateways cache storage reads (a store in this process's own memory has nothing to save);
    // replicas invalidate each other's entries through ReplicaSync, which then has to carry every
    // written key, and workers sharing a store through its change feed.
    // A store in this process's memory needs none; `disable_cache` turns it off elsewhere too.
    const cached = options.config.cacheSize !== 0 && !(options.physical.kind === 'inmem' && !options.physical.changes);
    this.storageCache = cached ? new CachedPhysical(options.physical, options.config.cacheSize) : undefined;
    this.barrier = new Barrier(this.storageCache ?? options.physical);
    this.namespaces = new NamespaceRegistry(this.barrier);
    this.tokens = new TokenStore(createView(this.barrier, 'sys/token/'));
    this.leases = new ExpirationManager(createView(this.barrier, 'sys/expire/'), options.locks, (lease) => this.leaseLifecycle.revoke(lease), options.logger, () => this.replication.isDrSecondary);
    this.leaseLifecycle = new LeaseLifecycle({
      expiration: this.leases,
      namespaces: this.namespaces,
      dispatch: (message) => this.dispatch(message),
      limits: (mount) => this.tokenLimits(mount),
      revokeToken: (accessor) => this.tokenManager.revokeTree(accessor),
    });
    this.tokenManager = new TokenManager(this.tokens, this.leases, {
      revokeLeasesOf: (accessor) => this.leaseLifecycle.revokeOfToken(accessor),
      purgeCubbyhole: (accessor) => this.purgeCubbyhole(accessor),
    });
    this.logins = new Logins({
      tokens: this.tokenManager,
      namespaces: this.namespaces,
      limits: (mount) => this.tokenLimits(mount),
      dispatch: (message) => this.dispatch(message),
      identity: (namespace) => this.identityStore(namespace),
      forwardToPrimary: (call, body) => this.replication.forwardToPrimary(call, body),
    });
    this.authorizer = new Authorizer(this.namespaces, (namespace) => this.identityStore(namespace));
    this.wrapping = new ResponseWrapper(this.tokenManager, this.namespaces, this.barrier, options.config.maxLeaseTtl);
    this.audit = new AuditDevices(createView(this.barrier, ''), options.logger);
    // Progress lives in the barrier, so a share sent to any gateway replica counts.
    const coreView = createView(this.barrier, 'core/');
    const keys = this.seal.recoverySeal ? 'recovery-keys' : 'unseal-keys';
    this.keysRekey = new Rekey(coreView, `rekey/${keys}`, `${keys}-backup`, this.seal.authorityKeys);
    if (this.seal.rootKeyRotation) this.rootKeyRekey = new Rekey(coreView, 'rekey/root-key', 'unseal-keys-backup', this.seal.rootKeyRotation);
    this.generateRoot = new GenerateRoot(coreView, 'generate-root', () => this.seal.authorityKeys, () => this.createRootToken(), SERVICE_TOKEN_LENGTH);
    this.replication = new Replication({
      store: createView(this.barrier, REPLICATION_STORAGE_PREFIX),
      logger: options.logger,
      apiAddr: () => options.config.apiAddr ?? this.apiAddresses[0] ?? '',
      clusterListenAddress: () => options.config.listeners[0]?.clusterAddress,
      clusterAddr: (bound) => options.config.clusterAddr ?? `https://${bound}`,
      wrap: (data, ttl, path) => this.wrapping.wrap(envelope(randomUUID(), { data }), ttl, this.namespaces.get('')!, path),
      keyring: () => this.barrier.keyring,
      shareVerifier: () => this.seal.shareVerifier(),
      replaceStorage: (keyring, entries) => this.replaceForSecondary(keyring, entries),
      mounts: () => this.allMountRefs(),
      namespaces: () => this.namespaces.all().map((namespace) => ({ path: namespace.path, storagePrefix: Namespace.storagePrefix(namespace.record) })),
      physical: this.storageCache ?? options.physical,
      shipperLimits: {
        maxEntries: options.config.replication?.logShipperBufferLength ?? DEFAULT_SHIPPER_LIMITS.maxEntries,
        maxBytes: options.config.replication?.logShipperBufferSize ?? DEFAULT_SHIPPER_LIMITS.maxBytes,
      },
      localMountUuids: () => this.allMounts().filter((mount) => mount.local || mount.type === 'cubbyhole').map((mount) => mount.uuid),
      adoptKeyring: (keyring) => this.installKeyring(keyring),
      storageChanged: (keys) => this.replicatedWritesApplied(keys),
      serveForwarded: (call, body) => this.serveForwarded(call, body),
      sendToOwner: (options.replicationOwner ?? true) === true ? undefined : replicationOwnerClient(options.bus, options.config.bus?.subjectPrefix ?? 'svc'),
    });
    // A performance secondary writes only its local keys; the rest it forwards (request/forwarding.ts).
    this.barrier.setWriteGuard((key) => this.replication.writable(key));
    this.drOperationToken = new GenerateRoot(
      createView(this.barrier, REPLICATION_STORAGE_PREFIX),
      'dr/generate-operation-token',
      () => this.replication.drShareAuthority(),
      () => this.replication.createOperationToken(),
      SERVICE_TOKEN_LENGTH,
      'DR operation token generation',
    );
    this.engines = new EngineRegistry([...this.ownEngineTypes(), ...options.engineTypes]);
    this.coreEngines = new EngineHost(GATEWAY, this.engines.factoriesFor(GATEWAY), this.barrier, { locks: options.locks, logger: options.logger, metrics: options.metrics }, false);
    this.plugins = new Plugins(this.barrier, this.engines, options.databasePlugins ?? [], options.config.pluginDirectory, options.logger, options.config.maxRequestDurationMs);
    const subjectPrefix = options.config.bus?.subjectPrefix;
    this.distributor = new KeyringDistributor(options.bus, {
      subjectPrefix,
      rootKey: () => (this.seal.rootKeyFromPeers ? this.seal.rootKeyCopy() : undefined),
      sealGeneration: () => this.unsealedInGeneration,
    });
    this.peers = new KeyringReceiver(options.bus, {
      subjectPrefix,
      onError: (err) => this.logger.warn({ err: describeRequestError(err) }, 'keyring request from peer failed'),
    });
    const hooks: ReplicaSyncHooks = {
      apply: (keys) =>
        this.reloadCaches(keys).catch((err: unknown) => {
          this.logger.warn({ keys: keys.length, err: describeRequestError(err) }, "applying another replica's changes failed");
          throw err;
        }),
      resync: () => this.resyncCaches(),
    };
    // Workers that open the store themselves follow its change feed; replicas that share it over
    // the network tell each other of their writes.
    const feed = options.physical.changes;
    const watched = this.storageCache ? () => true : isCachedKey;
    this.replicas = feed ? new StoreFollower(feed, hooks) : new ReplicaSync(options.bus, subjectPrefix ?? 'svc', watched, hooks);
    this.barrier.onWrite((event) => this.replicas.noteWrite(event.key));
    this.services = new ServiceWatch(options.bus, subjectPrefix);
    this.busRequests = options.metrics.timer('bus.request', 'Engine service requests sent over the bus, by service (round trip)', ['service']);
    this.registerGauges(options.metrics);
    this.system = options.systemBackend(this);
    this.coreEngines.register(SYSTEM_MOUNT, this.system);
  }

  /** The auto-unseal provider a `seal` stanza names; none for the Shamir seal. */
  private sealProvider(seal: ServerConfig['seal']): RootKeyWrapper | undefined {
    switch (seal.type) {
      case 'shamir':
        return undefined;
      case 'pkcs11':
        return new Pkcs11KeyWrapper(seal);
      case 'awskms':
        return new AwsKmsKeyWrapper(seal);
      case 'transit':
        return new TransitKeyWrapper(seal, (err) => this.logger.warn({ err: err.message }, 'transit seal token renewal failed; retrying'));
    }
  }

  /** The core's own mounts, present in every namespace and built over the core's state, as in Vault. */
  private ownEngineTypes(): EngineType[] {
    return [
      { type: 'system', table: 'secret', runsIn: GATEWAY, builtin: true, factory: () => this.system },
      { type: 'token', table: 'auth', runsIn: GATEWAY, builtin: true, factory: () => createTokenBackend(this) },
      { type: 'cubbyhole', table: 'secret', runsIn: GATEWAY, builtin: true, factory: (_mount, context) => createCubbyholeBackend(context.storage) },
      {
        type: 'identity',
        table: 'secret',
        runsIn: GATEWAY,
        builtin: true,
        factory: (mount, context) =>
          createIdentityBackend({
            store: new IdentityStore(context.storage),
            namespaceId: this.namespaces.get(mount.namespace)?.record.id ?? '',
            authMount: (accessor) => this.namespaces.get(mount.namespace)?.authMounts.list().find((auth) => auth.accessor === accessor),
          }),
      },
    ];
  }

  private get defaultKvVersion(): '1' | '2' {
    return this.options.defaultKvVersion ?? '1';
  }

  get config(): ServerConfig {
    return this.options.config;
  }

  get logger(): Logger {
    return this.options.logger;
  }

  get state(): CoreState {
    if (!this.initialized) return 'uninitialized';
    // A replica following a peer's unseal answers as sealed until its mount tables are loaded.
    return this.barrier.sealed || !this.opened ? 'sealed' : 'unsealed';
  }

  async start(): Promise<void> {
    await this.options.physical.open();
    // Closed again on refusal, so the process can exit: nothing else is running yet.
    await refuseUnfinishedMigration(this.options.physical).catch(async (err: unknown) => {
      await this.options.physical.close();
      throw err;
    });
    this.initialized = (await this.seal.status()).initialized;
    this.peers.onChange((keyring, sealGeneration) => {
      // Applied in order, one at a time; a failure is logged, the next announcement retries.
      this.peerTransitions = this.peerTransitions
        .then(() => this.followPeers(keyring, sealGeneration))
        .catch((err: unknown) => this.logger.warn({ err: describeRequestError(err) }, 'following a peer seal change failed'));
    });
    await this.peers.start();
    // A peer already unsealed: follow it before serving, so no client meets this replica still sealed.
    await this.peerTransitions;
    await this.replicas.start();
    if (this.replication.owns) this.serveReplicationCalls();
    if (this.options.replicationOwner === 'lease') {
      this.replicationLeaseTimer = setInterval(() => void this.checkReplicationLease(), REPLICATION_LEASE_CHECK_MS);
      void this.checkReplicationLease();
    }
    this.seal.start();
    if (!this.initialized) return;
    const status = await this.seal.status();
    if (status.migration) {
      const to = this.options.config.seal.type;
      this.logger.warn({ from: status.type, to }, 'entering seal migration mode: the service stays sealed until sys/unseal is given the old seal\'s keys with migrate=true');
    } else if (this.seal.recoverySeal) {
      await this.unsealAutomatically();
    }
  }

  /**
   * Opens an auto-unseal seal through its provider. While the provider cannot be reached the
   * service stays sealed (503) and tries again, so it recovers on its own when the provider returns.
   */
  private async unsealAutomatically(): Promise<void> {
    this.autoUnsealRetry = undefined;
    if (this.stopping || !this.barrier.sealed) return;
    try {
      await this.unsealWith(await this.seal.unsealAutomatically());
    } catch (err) {
      if (!(err instanceof SealUnavailableError)) throw err;
      this.logger.error({ err: err.message, retryInMs: AUTO_UNSEAL_RETRY_MS }, 'the seal could not unseal the service; it stays sealed and tries again');
      this.autoUnsealRetry = setTimeout(() => {
        this.unsealAutomatically().catch((failure: unknown) => this.logger.error({ err: describeRequestError(failure) }, 'automatic unseal failed'));
      }, AUTO_UNSEAL_RETRY_MS);
    }
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

  /**
   * Another process replaced the storage (a restore, or a secondary's activation, which brings the
   * primary's keyring, whose term need not be higher than the one here): the keyring is read
   * again with the root key (taken from a peer if this replica followed an unseal), announced so
   * the engine services ask again, and every cache reloaded with the replication state. A replica
   * that cannot read it seals rather than serve with the old one; its next request follows its
   * peers' unseal again.
   */
  private async followStorageReplaced(): Promise<void> {
    let keyring: Keyring;
    try {
      await this.holdRootKey();
      keyring = await this.seal.reloadKeyring();
    } catch (err) {
      this.logger.warn({ err: describeRequestError(err) }, 'the storage was replaced and its keyring could not be read here; sealing until the next request follows the peers');
      await this.sealLocally();
      return;
    }
    this.barrier.unseal(keyring);
    await this.distributor.publish(keyring);
    await this.reloadRestored();
    await this.replication.load();
  }

  /** Another replica changed cached state: read it again. */
  private async reloadCaches(keys: string[]): Promise<void> {
    this.storageCache?.invalidate(keys);
    if (keys.includes(PEER_UNSEALED)) await this.followPeerUnseal();
    if (this.barrier.sealed) return;
    if (keys.includes(SEAL_GENERATION_KEY) && (await this.sealGeneration()) !== this.unsealedInGeneration) return this.followPeerSeal();
    if (keys.includes(STORAGE_RESTORED)) return this.followStorageReplaced();
    if (keys.includes(KEYRING_CHANGED)) await this.fetchRotatedKeyring();
    this.coreEngines.invalidate(keys);
    this.plugins.host.invalidate(keys);
    for (const local of this.options.localServices.values()) local.invalidate(keys);
    this.tokens.forgetKeys(keys);
    if (keys.includes(PLUGIN_RELOAD_KEY)) {
      const reload = await createView(this.barrier, '').getJSON<{ mounts: string[] }>(PLUGIN_RELOAD_KEY);
      for (const uuid of reload?.mounts ?? []) this.dropLocalBackend(uuid);
    }
    if (keys.includes(AUDIT_TABLE_KEY)) await this.audit.load();
    if (keys.some((key) => key.startsWith(REPLICATION_STORAGE_PREFIX))) await this.replication.load();
    await this.leases.noteRemoteChange(keys.filter((key) => key.startsWith(LEASE_KEY_PREFIX)));
    if (keys.includes(NAMESPACES_KEY)) {
      await this.namespaces.load(this.defaultKvVersion);
      return;
    }
    const own = (namespace: Namespace) => {
      const prefix = Namespace.storagePrefix(namespace.record);
      return keys.filter((key) => key.startsWith(prefix)).map((key) => key.slice(prefix.length));
    };
    for (const namespace of this.namespaces.all()) {
      for (const key of own(namespace)) if (key.startsWith(POLICY_PREFIX)) namespace.policies.forget(key.slice(POLICY_PREFIX.length));
    }
    await this.namespaces.reloadTables((namespace) => own(namespace).some(isMountTableKey));
    // A mount disabled through another replica: its plugin process here stops too.
    this.plugins.host.retainOnly(new Set(this.allMounts().map((mount) => mount.uuid)));
  }

  private allMounts(): MountEntry[] {
    return this.namespaces.all().flatMap((namespace) => namespace.allMounts().map(({ mount }) => mount));
  }

  /**
   * Contact with the cluster came back after a gap, during which changes may have been missed: drop
   * every cache and reload from storage. A seal made meanwhile seals this replica too; a keyring
   * rotated meanwhile is fetched from the peers.
   */
  private async resyncCaches(): Promise<void> {
    this.storageCache?.clear();
    if (this.barrier.sealed) return;
    if ((await this.sealGeneration()) !== this.unsealedInGeneration) {
      this.logger.warn('the cluster was sealed while this replica was out of contact; sealing');
      await this.sealLocally();
      await this.peers.refresh();
      return;
    }
    await this.fetchRotatedKeyring();
    await this.reloadState();
  }

  /** Drops every cache and reads the cached state again from storage. */
  private async reloadState(): Promise<void> {
    this.storageCache?.clear();
    await this.tokens.load();
    await this.namespaces.load(this.defaultKvVersion);
    await this.audit.load();
    this.leases.forgetSchedule();
  }

  /** sys/storage/raft/snapshot: an archive of the whole storage as of now (see @svc/snapshot). */
  saveSnapshot(): Promise<SnapshotFile> {
    return createSnapshot(this.options.physical, this.barrier.keyring);
  }

  /**
   * sys/storage/raft/snapshot[-force]: checks the archive, then replaces the storage with it in one
   * transaction. A snapshot of this installation keeps the seal's entries in force and every
   * process reloads what it cached (mount tables, policies, tokens, engine backends with their
   * caches), so the service answers as at the snapshot's time. Another installation's snapshot
   * (forced) brings its own seal: the cluster seals, to be unsealed with that snapshot's keys.
   */
  async restoreSnapshot(body: Readable, force: boolean): Promise<void> {
    const snapshot = await openSnapshot(body, this.barrier.keyring);
    try {
      if (!snapshot.sameInstallation && !force) throw ServiceError.badRequest(FOREIGN_SNAPSHOT);
      const before = this.mountUuids();
      await (this.storageCache ?? this.options.physical).replaceAll(snapshot.entries(), snapshot.sameInstallation ? KEPT_ON_RESTORE : new Set());
      this.logger.warn({ snapshot: snapshot.meta.id, created_at: snapshot.meta.created_at, foreign: !snapshot.sameInstallation }, 'storage restored from a snapshot');
      if (!snapshot.sameInstallation) {
        // The storage is now readable only with the snapshot's keys: nothing is reloaded until then.
        await this.dropBackends(before);
        await this.sealNow();
        return;
      }
      await this.reloadRestored(before);
      this.replicas.announce(STORAGE_RESTORED);
    } finally {
      await snapshot.dispose();
    }
  }

  /**
   * A secondary's activation: every entry goes but the seal's and `entries` (the replication
   * state), the primary's keyring becomes this cluster's (stored under this cluster's root key, so
   * its own unseal keys still open it), and every process drops what it cached, as after a restore.
   */
  private async replaceForSecondary(keyring: Keyring, entries: [string, Buffer][]): Promise<void> {
    const before = this.mountUuids();
    await (this.storageCache ?? this.options.physical).replaceAll(noEntries(), KEPT_ON_RESTORE);
    await this.seal.persistKeyring(keyring);
    this.barrier.unseal(keyring);
    const view = createView(this.barrier, REPLICATION_STORAGE_PREFIX);
    for (const [key, value] of entries) await view.put(key, value);
    await this.loadClusterIdentity();
    await this.reloadRestored(before);
    await this.distributor.publish(keyring);
    this.replicas.announce(STORAGE_RESTORED);
  }

  /** The mounts replication's filters can name (not the built-in ones every namespace has), auth mounts under auth/. */
  private allMountRefs(): MountRef[] {
    return this.namespaces.all().flatMap((namespace) =>
      namespace
        .allMounts()
        .filter(({ mount }) => !this.engines.forMount(mount)?.builtin)
        .map(({ mount, prefix }) => ({ namespace: namespace.path, path: prefix + mount.path, storagePrefix: mountStoragePrefix(mount) })),
    );
  }

  /**
   * After a restore (here or on a peer): reloads the cached state and drops every engine backend,
   * in this process and in every engine service, so none serves what it cached before.
   */
  private async reloadRestored(before: readonly string[] = this.mountUuids()): Promise<void> {
    await this.reloadState();
    await this.dropBackends(new Set([...before, ...this.mountUuids()]));
  }

  /** Drops the mounts' backends here (plugin processes stopped) and in every engine service; each is built again on its next request. */
  private async dropBackends(uuids: Iterable<string>): Promise<void> {
    for (const uuid of uuids) {
      this.dropLocalBackend(uuid);
      await this.options.bus.publish(mountRemovedSubject(this.config.bus?.subjectPrefix), encodeJson({ uuid }));
    }
  }

  /** Drops a mount's backend in this process only. */
  private dropLocalBackend(uuid: string): void {
    this.coreEngines.forget(uuid);
    this.plugins.host.forget(uuid);
    for (const local of this.options.localServices.values()) local.forget(uuid);
  }

  /** Every mount's uuid in every namespace, but the sys/ backend's (which is never rebuilt). */
  private mountUuids(): string[] {
    return this.namespaces
      .all()
      .flatMap((namespace) => namespace.allMounts())
      .filter(({ mount }) => mount.type !== 'system')
      .map(({ mount }) => mount.uuid);
  }

  private async sealGeneration(): Promise<number> {
    return generationOf(await this.options.physical.get(SEAL_GENERATION_KEY));
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.autoUnsealRetry);
    this.seal.close();
    clearInterval(this.periodic);
    await this.coreEngines.closeAll();
    await this.plugins.host.closeAll();
    await this.leases.stop();
    clearInterval(this.replicationLeaseTimer);
    await this.replicationLeaseCheck;
    this.replicationOwnerCalls?.unsubscribe();
    await this.replication.stop();
    // Given back at once: a standing-by replication service takes over without waiting for it to lapse.
    await this.replicationLease?.release().catch(() => undefined);
    this.replicas.stop();
    this.services.stop();
    this.peers.close();
    this.distributor.close();
    await this.options.physical.close();
  }

  /** A peer sealed the cluster: seal here, in turn with the seal broadcast, which may come first. */
  private followPeerSeal(): Promise<void> {
    const sealed = this.peerTransitions.then(() => this.followPeers(undefined));
    this.peerTransitions = sealed.catch((err: unknown) => this.logger.warn({ err: describeRequestError(err) }, 'following a peer seal change failed'));
    return sealed;
  }

  /** A peer unsealed: fetch its keyring (unless already open) and finish following it. */
  private async followPeerUnseal(): Promise<void> {
    // A busy peer may answer late: asked again a few times (one with no peer unsealed is told so at once).
    for (let attempt = 0; attempt < PEER_UNSEAL_ATTEMPTS && this.state !== 'unsealed'; attempt++) {
      await this.peers.refresh();
      await this.peerTransitions;
    }
  }

  private async followPeers(keyring: Keyring | undefined, sealGeneration?: number): Promise<void> {
    if (keyring && this.barrier.sealed) {
      // A peer that unsealed before the cluster's last seal, and has yet to follow it, is not followed.
      if (sealGeneration !== undefined && sealGeneration < (await this.sealGeneration())) return;
      this.initialized = true;
      await this.unsealWith(keyring);
      // Every unsealed gateway holds the root key, as one unsealed with shares does: a sys/rotate
      // then works on any of them, whichever peers have gone since.
      await this.holdRootKey().catch((err: unknown) => this.logger.warn({ err: describeRequestError(err) }, 'taking the root key from a peer failed; sys/rotate will ask again'));
    } else if (keyring && keyring.activeTerm > this.barrier.keyring.activeTerm) {
      this.barrier.unseal(keyring); // a peer rotated: new writes use the new term here too
      await this.distributor.publish(keyring);
    } else if (!keyring && !this.barrier.sealed) {
      await this.sealLocally();
    }
  }

  /** sys/init: creates the seal, the keyring and the root token; an auto-unseal seal then unseals. */
  async initialize(req: InitRequest): Promise<InitAnswer> {
    if (this.initialized) throw ServiceError.badRequest('Service is already initialized');
    const result = await this.seal.initialize(req).catch((err: unknown) => {
      // The provider's message names what failed (a missing HSM key, say), never key material.
      throw err instanceof SealUnavailableError ? ServiceError.unavailable(err.message) : err;
    });
    this.initialized = true;
    // Unsealed only long enough to write the root token and default mounts; peers are not told.
    await this.unsealWith(result.keyring, false);
    const root = await this.createRootToken(req.rootTokenId);
    await this.sealLocally();
    const rootToken = req.root_token_pgp_key ? await encryptRootToken(req.root_token_pgp_key, root) : root;
    if (this.seal.recoverySeal) await this.unsealAutomatically();
    const { keyring: _keyring, ...keys } = result;
    return { ...keys, root_token: rootToken };
  }

  /**
   * sys/unseal: one share at a time; the last one unseals. In seal migration mode the shares are
   * the old seal's and `migrate` must be set (and only then), as Vault requires.
   */
  async submitUnsealKey(key: string | undefined, reset: boolean, migrate = false): Promise<void> {
    if (!this.initialized) throw ServiceError.uninitialized();
    const from = await this.seal.status();
    if (!reset && migrate !== from.migration) throw ServiceError.badRequest(migrate ? MIGRATE_UNEXPECTED : MIGRATE_REQUIRED);
    if (from.migration) {
      const outcome = await this.seal.submitUnsealKey(key ?? '', reset);
      if (!outcome.keyring) return;
      this.logger.warn({ from: from.type, to: this.options.config.seal.type }, 'seal migration complete: the root key is now protected by the new seal');
      await this.unsealEverywhere(outcome.keyring);
      return;
    }
    // An auto-unseal seal refuses every key, sealed or not: recovery keys must never look like unseal keys.
    if (!this.barrier.sealed && !this.seal.recoverySeal) return;
    const outcome = await this.seal.submitUnsealKey(key ?? '', reset);
    if (outcome.keyring) await this.unsealEverywhere(outcome.keyring);
  }

  /**
   * A client's unseal: the announcement alone lets the sealed replicas follow at their own pace,
   * so a client's next call could meet one still sealed; noting PEER_UNSEALED makes each of them
   * follow before the call returns, as a seal does.
   */
  private async unsealEverywhere(keyring: Keyring): Promise<void> {
    await this.unsealWith(keyring);
    this.replicas.announce(PEER_UNSEALED);
  }

  /** Opens the barrier and loads cached state; `announce` hands the keyring to services and peers. */
  async unsealWith(keyring: Keyring, announce = true): Promise<void> {
    this.unsealedInGeneration = await this.sealGeneration();
    this.barrier.unseal(keyring);
    await this.tokens.load();
    await this.namespaces.load(this.defaultKvVersion);
    await this.audit.load();
    await this.loadClusterIdentity();
    // A cluster listener that cannot bind must not keep the barrier shut: the status shows the mode, the log why.
    await this.replication.load().catch((err: unknown) => this.logger.warn({ err: describeRequestError(err) }, 'replication could not start its cluster link'));
    this.opened = true;
    this.activeSince = new Date();
    if (!announce) return;
    this.periodic ??= setInterval(() => {
      this.runPeriodicFunctions().catch((err: unknown) => this.logger.warn({ err: describeRequestError(err) }, 'periodic pass failed (taking its lock, recording it, or telling the other replicas of its changes); the next one tries again'));
    }, PERIODIC_INTERVAL_MS).unref();
    this.leases.start();
    await this.distributor.publish(keyring);
    this.logger.info({ term: keyring.activeTerm }, 'unsealed');
  }

  /** Seals this process and every process holding the keyring. */
  async sealNow(): Promise<void> {
    await this.options.physical.transaction(async (tx) => {
      const next = generationOf(await tx.get(SEAL_GENERATION_KEY)) + 1;
      await tx.put(SEAL_GENERATION_KEY, Buffer.from(String(next)));
    });
    await this.sealLocally();
    await this.distributor.seal();
    // The broadcast is not acknowledged; every replica acknowledges this key before the call returns.
    this.replicas.announce(SEAL_GENERATION_KEY);
  }

  private async sealLocally(): Promise<void> {
    this.opened = false;
    clearInterval(this.periodic);
    this.periodic = undefined;
    this.distributor.close(); // a sealed replica must not hand out its old keyring
    await this.replication.stop();
    await this.leases.stop();
    await this.plugins.host.closeAll();
    await this.seal.seal();
    await this.audit.close();
    this.storageCache?.clear();
    this.tokens.clear();
    this.barrier.seal();
    this.logger.info('sealed');
  }

  /** sys/rotate: a new keyring term for new writes; old terms stay for reading. */
  async rotateKeyring(): Promise<Keyring> {
    await this.holdRootKey();
    const next = this.barrier.keyring.rotate();
    await this.installKeyring(next);
    return next;
  }

  /**
   * A gateway (or worker) that followed a peer's unseal holds the keyring but not the root key the
   * keyring is stored under: with a Shamir seal it takes it from a peer that holds it, sealed to
   * this process over the authenticated bus.
   */
  private async holdRootKey(): Promise<void> {
    if (!this.seal.rootKeyFromPeers || this.seal.keyring) return;
    const rootKey = await this.peers.fetchRootKey().catch((err: unknown) => {
      if (err instanceof BusUnavailableError) throw ServiceError.unavailable('no unsealed gateway holding the root key answered; retry, or seal and unseal with the unseal keys');
      throw err;
    });
    try {
      await this.seal.adoptRootKey(rootKey);
    } finally {
      rootKey.fill(0);
    }
    this.distributor.serveRootKey();
  }

  /** Makes `keyring` this cluster's: stored under the root key, used here, fetched by the replicas. */
  private async installKeyring(keyring: Keyring): Promise<void> {
    await this.seal.persistKeyring(keyring);
    this.barrier.unseal(keyring);
    await this.distributor.publish(keyring);
    // Replicas fetch the new term before a request that made it returns (the pipeline flushes).
    this.replicas.announce(KEYRING_CHANGED);
  }

  /**
   * A secondary applied its primary's writes below the barrier: the caches of this process
   * (mount tables, policies, tokens, engine backends here and in the engine services it hosts)
   * and of every replica are reloaded for those keys, or wholly after a resync.
   */
  private async replicatedWritesApplied(keys: string[] | undefined): Promise<void> {
    if (!keys) {
      await this.reloadRestored();
      this.replicas.announce(STORAGE_RESTORED);
    } else {
      await this.reloadCaches(keys);
      for (const local of this.options.localServices.values()) local.invalidate(keys);
      await this.invalidateEngineServices(keys);
      for (const key of keys) this.replicas.announce(key);
    }
    // Outside any request: the other processes of this cluster hear of it now, not with the next request here.
    if (this.replicas.hasPending) await this.replicas.flush();
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

  /** sys/rekey/*: the unseal keys of the Shamir seal; with an auto-unseal seal, as in Vault, the root key (recovery shares authorize). */
  unsealRekey(): Rekey {
    return this.rootKeyRekey ?? this.keysRekey;
  }

  /** sys/rekey-recovery-key/*: only a seal with recovery keys has them to rekey. */
  recoveryRekey(): Rekey {
    if (!this.seal.recoverySeal) throw ServiceError.badRequest('the shamir seal has no recovery keys: recovery-key rekey needs an auto-unseal seal; use sys/rekey for the unseal keys');
    return this.keysRekey;
  }

  /** The namespace a request runs in (its mount's namespace). */
  namespaceOf(req: { mount: MountInfo }): Namespace {
    const namespace = this.namespaces.get(req.mount.namespace);
    if (!namespace) throw ServiceError.notFound(`namespace "${req.mount.namespace}" does not exist`);
    return namespace;
  }

  /** The namespace a full path falls in, and the mount serving the rest of it. */
  route(fullPath: string): { namespace: Namespace; path: string; route?: Route } {
    const { namespace, path } = this.namespaces.resolve(fullPath);
    return { namespace, path, route: namespace.route(path) };
  }

  /** Sends an operation to the engine that owns the mount type. */
  dispatch(message: EngineRequest): Promise<EngineReply> {
    if (message.mount.external) return this.plugins.host.handle(message);
    const engine = this.engines.forMount(message.mount);
    if (!engine) return Promise.reject(ServiceError.badRequest(`unsupported mount type "${message.mount.type}"`));
    if (engine.runsIn === GATEWAY) return this.coreEngines.handle(message);
    return this.options.localServices.get(engine.runsIn)?.handle(message) ?? this.dispatchRemote(engine.runsIn, message);
  }

  private async dispatchRemote(service: string, request: EngineRequest): Promise<EngineReply> {
    // The service's barrier has no replication state: it is told when a mount is read-only here.
    const message = this.barrier.canWrite(mountStoragePrefix(request.mount)) ? request : { ...request, replicatedReadOnly: true };
    for (let attempt = 0; ; attempt++) {
      const reply = await this.requestService(service, message);
      // Right after an unseal, services are still fetching the keyring: give them a moment.
      if (reply.ok || reply.kind !== 'sealed' || attempt >= SERVICE_UNSEAL_RETRIES || this.barrier.sealed) return reply;
      await new Promise((resolve) => setTimeout(resolve, SERVICE_UNSEAL_RETRY_MS));
    }
  }

  private async requestService(service: string, message: EngineRequest): Promise<EngineReply> {
    const started = performance.now();
    try {
      // The request id travels inside the message; no bus headers to encode on the hot path.
      const subject = serviceSubject(service, this.config.bus?.subjectPrefix);
      const reply = await this.services.track(service, this.options.bus.request(subject, encodeJson(message), { timeoutMs: this.config.maxRequestDurationMs }));
      const decoded = decodeJson<EngineReply>(reply.payload);
      this.busRequests.series(service).record(started, false);
      return decoded;
    } catch (err) {
      this.busRequests.series(service).record(started, true);
      if (err instanceof BusUnavailableError) {
        throw ServiceError.unavailable(`service "${service}" is unavailable (${err.reason})`);
      }
      throw err;
    }
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

  /**
   * Whether a request is a login to an auth method of this process: it is outside the ACL, and a
   * token sent with it is ignored, as Vault ignores one on its unauthenticated paths.
   */
  isLogin(mount: MountInfo, path: string, operation: Operation): boolean {
    return operation !== 'help' && this.isCoreEngine(mount) && this.coreEngines.isUnauthenticated(mount, path, operation);
  }

  isUnauthenticatedSystem(path: string, operation: Operation): boolean {
    return operation !== 'help' && this.system.operationInfo(path, operation)?.unauthenticated === true;
  }

  /** The request path of this core, given the parts of it each step uses. */
  requestHandler(): RequestHandler {
    return new RequestHandler({
      seal: this,
      replicas: this.replicas,
      router: this,
      tokens: this.tokens,
      revokeToken: (accessor) => this.tokenManager.revokeTree(accessor),
      authorizer: this.authorizer,
      audit: this.audit.broker,
      leases: this.leaseLifecycle,
      logins: this.logins,
      wrapper: this.wrapping,
      dispatcher: forwardingDispatcher(
        this,
        (call, body) => this.replication.forwardToPrimary(call, body),
        () => this.replication.isPerformanceSecondary,
      ),
      resolveToken: (value) => this.replication.resolveWrappingToken(value),
      isDrSecondary: () => this.replication.isDrSecondary,
      requests: this.options.metrics.timer('core.handle_request', 'Requests handled by the gateway, by namespace, mount and operation', ['namespace', 'mount', 'operation']),
    });
  }

  /** The gauges read from this core's state when the metrics are read. */
  private registerGauges(metrics: Metrics): void {
    metrics.gauge('core.unsealed', '1 while this gateway is unsealed, 0 otherwise', [], (gauge) => gauge.set(this.state === 'unsealed' ? 1 : 0));
    metrics.gauge('expire.num_leases', 'Leases in the expiration queue, on the gateway that runs it (0 on the others)', [], (gauge) => gauge.set(this.leases.queueSize));
    metrics.usageGauge('token.count', 'Live service tokens (a usage gauge: counted at most once per usage_gauge_period)', async () => {
      this.assertUnsealed();
      return (await this.tokens.allAccessors()).length;
    });
  }

  /** Whether a mount type runs in this process (core engines get the caller's token value). */
  isCoreEngine(mount: MountInfo): boolean {
    return this.engines.forMount(mount)?.runsIn === GATEWAY;
  }

  /** TTL defaults and maximums for a mount: its tune, else the system's. */
  tokenLimits(mount: MountInfo): TokenLimits {
    return {
      defaultTtl: mount.config.default_lease_ttl || this.config.defaultLeaseTtl,
      maxTtl: mount.config.max_lease_ttl || this.config.maxLeaseTtl,
    };
  }

  /** Deletes a namespace: its tokens and leases are revoked, its mounts and data removed. */
  async deleteNamespace(namespace: Namespace): Promise<void> {
    if (this.namespaces.children(namespace).length > 0) {
      throw ServiceError.badRequest(`namespace "${namespace.path}" has child namespaces; delete them first`);
    }
    await this.leaseLifecycle.revokeUnder(namespace, '', true);
    for (const accessor of await this.tokens.allAccessors()) {
      const found = await this.tokens.lookupAccessor(accessor);
      if (found?.entry.namespace === namespace.path) await this.tokenManager.revokeTree(accessor);
    }
    for (const { mount } of namespace.allMounts()) await this.purgeMountData(mount);
    await this.namespaces.remove(namespace);
    await deleteTree(createView(this.barrier, Namespace.storagePrefix(namespace.record)), '');
  }

  /** The identity store of a namespace (its identity/ mount's storage). */
  identityStore(namespace: Namespace): IdentityStore {
    return namespaceIdentity(this.barrier, namespace);
  }

  private async purgeCubbyhole(accessor: string): Promise<void> {
    for (const namespace of this.namespaces.all()) {
      const cubbyhole = namespace.secretMounts.get('cubbyhole/');
      if (cubbyhole) await deleteTree(createView(this.barrier, mountStoragePrefix(cubbyhole)).sub(`${accessor}/`), '');
    }
  }

  /**
   * On a performance primary: a write a secondary forwarded, run as the caller the secondary
   * authenticated and authorized (see request/forwarding.ts); its failure is its answer.
   */
  private async serveForwarded(call: ForwardCall, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    try {
      if (call === 'login-entity') {
        const entity = await this.identityStore(this.namespaceAt(body.namespace)).loginEntity(String(body.mount_accessor), String(body.name), (body.metadata ?? {}) as Record<string, string>);
        return { ok: true, entity };
      }
      const message = decodeForwardedRequest(body, (namespace, uuid) => this.mountByUuid(namespace, uuid));
      return encodeForwardedReply(await (message.mount.uuid === SYSTEM_MOUNT.uuid ? this.handleSystem(message) : this.dispatch(message)));
    } catch (err) {
      return { ok: false, ...errorOf(err) };
    } finally {
      // As after a request: the other gateway replicas hear of the writes before the secondary does.
      if (this.replicas.hasPending) await this.replicas.flush();
    }
  }

  /**
   * Tells every engine service's replicas (their own processes, or the services other gateway
   * workers host) which mount keys replication wrote, as a service replica tells the others of its
   * own writes: their backends drop what they cached of them.
   */
  private async invalidateEngineServices(keys: string[]): Promise<void> {
    const mountKeys = keys.filter((key) => mountOfKey(key) !== undefined);
    if (mountKeys.length === 0) return;
    const payload = encodeJson({ sender: this.replicas.id, keys: mountKeys } satisfies MountInvalidation);
    const prefix = this.options.config.bus?.subjectPrefix;
    await Promise.all(this.engines.services().map((service) => this.options.bus.publish(mountInvalidationSubject(service, prefix), payload)));
  }

  private serveReplicationCalls(): void {
    this.replicationOwnerCalls = serveReplicationOwnerCalls(this.options.bus, this.options.config.bus?.subjectPrefix ?? 'svc', (call, args) => this.serveReplicationCall(call, args));
  }

  /** A replication service renews its lease, or takes it when none holds it; owning the cluster's replication follows. */
  private checkReplicationLease(): Promise<void> {
    this.replicationLeaseCheck = this.replicationLeaseCheck
      .then(async () => {
        if (this.stopping) return;
        if (this.replicationLease) {
          if (await this.replicationLease.renew(REPLICATION_LEASE_TTL_MS)) return;
          this.replicationLease = undefined;
          this.logger.warn({}, "the replication lease lapsed: this replication service no longer owns the cluster's replication");
          await this.changeReplicationOwnership(false);
          return;
        }
        const lease = await this.options.locks.tryAcquire(REPLICATION_LEASE, REPLICATION_LEASE_TTL_MS);
        if (!lease) return;
        this.replicationLease = lease;
        this.logger.info({}, "replication lease taken: this replication service owns the cluster's replication");
        await this.changeReplicationOwnership(true);
      })
      .catch((err: unknown) => this.logger.warn({ err: describeRequestError(err) }, 'checking the replication lease failed; retrying'));
    return this.replicationLeaseCheck;
  }

  private async changeReplicationOwnership(owner: boolean): Promise<void> {
    this.replicationOwnerCalls?.unsubscribe();
    this.replicationOwnerCalls = undefined;
    await this.replication.changeOwnership(owner, this.state === 'unsealed');
    if (owner) this.serveReplicationCalls();
  }

  /** A call of another process of this cluster to the replication this one owns. */
  private async serveReplicationCall(call: unknown, args: unknown): Promise<unknown> {
    if ((await this.refreshSealState()) !== 'unsealed') throw ServiceError.sealed();
    try {
      return await this.replication.serveOwnerCall(call, args);
    } catch (err) {
      if (!(err instanceof ServiceError)) this.logger.error({ call, err: describeRequestError(err) }, 'replication call from another process failed');
      throw err;
    } finally {
      // As after a request: the caller's process reloads what the call changed before it answers.
      if (this.replicas.hasPending) await this.replicas.flush();
    }
  }

  private namespaceAt(path: unknown): Namespace {
    const namespace = typeof path === 'string' ? this.namespaces.get(path) : undefined;
    if (!namespace) throw ServiceError.badRequest(`namespace ${JSON.stringify(path)} does not exist on the primary`);
    return namespace;
  }

  /** A mount of this cluster by its uuid (the system mount of the namespace for sys/). */
  private mountByUuid(namespacePath: string, uuid: string): MountInfo | undefined {
    const namespace = this.namespaces.get(namespacePath);
    if (!namespace) return undefined;
    if (uuid === SYSTEM_MOUNT.uuid) return { ...SYSTEM_MOUNT, namespace: namespace.path };
    return namespace.allMounts().find(({ mount }) => mount.uuid === uuid)?.mount;
  }

  /** sys/ requests, which are served in every seal state (the pipeline decides which). */
  handleSystem(message: EngineRequest): Promise<EngineReply> {
    return this.coreEngines.handle(message);
  }

  /**
   * Another gateway replica may have initialized the shared storage, or unsealed, since we last
   * looked: an unseal whose announcement this replica has not followed yet (it may have started
   * too late for the unsealing one to wait for it) is followed now, one fetch for all callers.
   */
  async refreshSealState(): Promise<CoreState> {
    if (!this.initialized) this.initialized = (await this.seal.status()).initialized;
    if (this.initialized && this.state === 'sealed' && !this.stopping) {
      this.catchingUp ??= this.followPeerUnseal().finally(() => (this.catchingUp = undefined));
      await this.catchingUp;
    }
    return this.state;
  }

  /** Deletes everything a disabled mount stored. */
  async purgeMountData(entry: MountEntry): Promise<void> {
    await this.dropBackends([entry.uuid]);
    await deleteTree(createView(this.barrier, mountStoragePrefix(entry)), '');
  }

  /**
   * sys/plugins/reload/backend: the mounts' backends are dropped (plugin processes stopped) here
   * and in the engine services, and built again on their next request; `global` has every other
   * gateway replica drop its own too, before the call returns.
   */
  async reloadBackends(uuids: readonly string[], global: boolean): Promise<void> {
    await this.dropBackends(uuids);
    if (global) await createView(this.barrier, '').putJSON(PLUGIN_RELOAD_KEY, { mounts: uuids });
  }

  /**
   * Remounts complete synchronously; the id lets clients poll as Vault's API expects. Kept in
   * storage, so any gateway replica or worker answers the poll.
   */
  async newMigrationId(from: string, to: string): Promise<string> {
    const id = randomUUID();
    await createView(this.barrier, MOUNT_MOVES_PREFIX).putJSON(id, { source_mount: from, target_mount: to, status: 'success' });
    return id;
  }

  async migration(id: string): Promise<Record<string, string> | undefined> {
    if (!UUID_SHAPE.test(id)) return undefined;
    return (await createView(this.barrier, MOUNT_MOVES_PREFIX).getJSON<Record<string, string>>(id)) ?? undefined;
  }

  assertUnsealed(): void {
    if (!this.initialized) throw ServiceError.uninitialized();
    // A replica following a peer's unseal has an open barrier before its tables are loaded.
    if (this.state !== 'unsealed') throw ServiceError.sealed();
  }

  /**
   * Calls every mount's periodic function (rotations, tidy), as Vault's core does once a minute:
   * once a minute for the whole cluster, however many replicas' timers fire. Under the lock the
   * replica reads when the last pass started from storage itself and records its own before it
   * runs, so the replica that takes the lock next skips until a minute has passed. A mount's
   * failure does not stop the others.
   */
  async runPeriodicFunctions(): Promise<void> {
    // A DR secondary's data is its primary's: rotations and tidying happen there.
    if (this.replication.isDrSecondary) return;
    await this.options.locks.withLock('core-periodic', PERIODIC_INTERVAL_MS, async () => {
      if (!(await this.claimPeriodicPass())) return;
      const mounts = this.namespaces
        .all()
        .flatMap((namespace) => namespace.allMounts())
        .map(({ mount }) => mount)
        // Rotations and tidies write the mount's storage: where it is replicated, the primary's run comes back here.
        .filter((mount) => mount.type !== 'system' && (mount.external || this.engines.forMount(mount)) && this.barrier.canWrite(mountStoragePrefix(mount)));
      // Side by side: a mount whose provider is slow to answer (within its deadline) delays no other mount's rotations.
      await Promise.all(mounts.map(async (mount) => {
        const reply = await this.dispatch({
          kind: 'periodic',
          requestId: randomUUID(),
          mount,
          path: '',
          operation: 'update',
          data: {},
          headers: {},
          capabilities: ['root'],
        }).catch((err: unknown) => ({ ok: false as const, kind: 'internal' as const, errors: [describeRequestError(err).type] }));
        if (!reply.ok) this.logger.warn({ mount: mount.path, kind: reply.kind, errors: reply.errors }, 'periodic function failed');
      }));
      this.logger.info({ mounts: mounts.length }, 'periodic functions ran');
    });
    // Outside any request: the other replicas drop what they cached of the keys the pass changed
    // (a rotated static role's key) now, not when this replica next serves a request.
    if (this.replicas.hasPending) await this.replicas.flush();
  }

  /** Whether the periodic pass is due by what storage holds; if so, records that this one starts now. */
  private claimPeriodicPass(): Promise<boolean> {
    return this.barrier.transaction(async (tx) => {
      await tx.lock(PERIODIC_PASS_KEY);
      const last = await readJson<{ started: string }>(tx, PERIODIC_PASS_KEY);
      const now = Date.now();
      if (last && now < Date.parse(last.started) + PERIODIC_INTERVAL_MS - PERIODIC_TIMER_SLACK_MS) return false;
      await writeJson(tx, PERIODIC_PASS_KEY, { started: new Date(now).toISOString() });
      return true;
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


}

async function* noEntries(): AsyncIterable<never> {}

/** The stored seal generation (decimal text); none stored yet is generation 0. */
function generationOf(stored: Uint8Array | null): number {
  return stored ? Number(Buffer.from(stored).toString('utf8')) : 0;
}

async function deleteTree(view: StorageView, prefix: string): Promise<void> {
  for (const key of await view.list(prefix)) {
    if (key.endsWith('/')) await deleteTree(view, prefix + key);
    else await view.delete(prefix + key);
  }
}
