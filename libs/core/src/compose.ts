import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Bus } from '@svc/bus';
import type { ServerConfig } from '@svc/config';
import { EngineHost, EngineRegistry, GATEWAY, mountStoragePrefix, type EngineType } from '@svc/engine-host';
import type { MountInfo, PathDeclaration } from '@svc/framework';
import type { LockManager } from '@svc/locks';
import type { Metrics } from '@svc/metrics';
import { REPLICATION_STORAGE_PREFIX, Replication, type MountRef } from '@svc/replication';
import { DEFAULT_SHIPPER_LIMITS } from '@svc/replication-log';
import { GenerateRoot, type UnsealShares } from '@svc/seal';
import { Barrier, CachedPhysical, createView, refuseUnfinishedMigration, type Physical } from '@svc/storage';
import { Authorizer } from './access/authorizer';
import { AuditDevices } from './audit/audit-devices';
import { Logins } from './auth/logins';
import { CacheCoherence } from './cluster/cache-coherence';
import { ClusterIdentity } from './cluster/cluster-identity';
import { isCachedKey } from './cluster/coherence-keys';
import { ReplicaSync, type ReplicaSyncHooks } from './cluster/replica-sync';
import { replicationOwnerClient } from './cluster/replication-owner';
import { ReplicationOwnership } from './cluster/replication-ownership';
import { StoreFollower } from './cluster/store-follower';
import type { Core } from './core-parts';
import { createCubbyholeBackend, purgeCubbyholes } from './cubbyhole/cubbyhole-backend';
import { describeRequestError, envelope } from '@svc/api-contract';
import { createIdentityBackend } from './identity/identity-backend';
import { IdentityStore, namespaceIdentity } from './identity/identity-store';
import { ExpirationManager } from './leases/expiration';
import { LeaseLifecycle } from './leases/lease-lifecycle';
import { MountData } from './mounts/mount-data';
import { SYSTEM_MOUNT } from './mounts/system-mount';
import { namespaceRemoval } from './namespaces/namespace-removal';
import { Namespace } from './namespaces/namespace';
import { NamespaceRegistry } from './namespaces/registry';
import { PeriodicFunctions } from './periodic/periodic-functions';
import { Plugins } from './plugins/plugins';
import { forwardedCallServer } from './request/forwarded-calls';
import { forwardingDispatcher } from './request/forwarding';
import { RequestHandler } from './request/request-handler';
import { Router } from './routing/router';
import { KeyCeremonies } from './seal/key-ceremonies';
import { SealLifecycle, configuredSeal } from './seal/seal-lifecycle';
import { StorageReplacement } from './snapshots/storage-replacement';
import { createSystemBackend } from './sys';
import { createRootToken } from './tokens/root-token';
import { TokenManager, type TokenLimits } from './tokens/token-manager';
import { createTokenBackend } from './tokens/token-paths';
import { SERVICE_TOKEN_LENGTH, TokenStore } from './tokens/token-store';
import { ResponseWrapper } from './wrapping/response-wrapper';

export interface CoreOptions {
  config: ServerConfig;
  physical: Physical;
  bus: Bus;
  locks: LockManager;
  logger: Logger;
  /** The mount types of this build besides the core's own (system, token, cubbyhole, identity). */
  engineTypes: readonly EngineType[];
  /** Engine services running in this process (all-in-one): reached without serialization. */
  localServices: Map<string, EngineHost>;
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
  /** Paths the server adds to sys/ beside the core's own (sys/tools, which the transit engine declares). */
  systemPaths?: readonly PathDeclaration[];
}

/**
 * The composition root of a gateway's core: the only place that creates its parts and wires them
 * to each other. Parts lower in the order (seal lifecycle, cache coherence, router, request
 * handling, replication ownership) never call up: what they announce, the others hear as events.
 */
export function composeCore(options: CoreOptions): Core {
  const { config, logger, bus, locks, metrics, localServices } = options;
  const subjectPrefix = config.bus?.subjectPrefix;
  // Gateways cache storage reads; a store in this process's own memory needs none (unless workers
  // share it through a change feed), and `disable_cache` turns the cache off elsewhere too.
  const cached = config.cacheSize !== 0 && !(options.physical.kind === 'inmem' && !options.physical.changes);
  const storageCache = cached ? new CachedPhysical(options.physical, config.cacheSize) : undefined;
  const barrier = new Barrier(storageCache ?? options.physical);
  const namespaces = new NamespaceRegistry(barrier);
  const tokens = new TokenStore(createView(barrier, 'sys/token/'));
  const identityStore = (namespace: Namespace): IdentityStore => namespaceIdentity(barrier, namespace);
  const tokenLimits = (mount: MountInfo): TokenLimits => ({
    defaultTtl: mount.config.default_lease_ttl || config.defaultLeaseTtl,
    maxTtl: mount.config.max_lease_ttl || config.maxLeaseTtl,
  });

  const leases: ExpirationManager = new ExpirationManager(createView(barrier, 'sys/expire/'), locks, (lease) => leaseLifecycle.revoke(lease), logger, () => replication.isDrSecondary);
  const leaseLifecycle: LeaseLifecycle = new LeaseLifecycle({
    expiration: leases,
    namespaces,
    dispatch: (message) => router.dispatch(message),
    limits: tokenLimits,
    revokeToken: (accessor) => tokenManager.revokeTree(accessor),
  });
  const tokenManager: TokenManager = new TokenManager(tokens, leases, {
    revokeLeasesOf: (accessor) => leaseLifecycle.revokeOfToken(accessor),
    purgeCubbyhole: (accessor) => purgeCubbyholes(barrier, namespaces, accessor),
  });
  const logins = new Logins({
    tokens: tokenManager,
    namespaces,
    limits: tokenLimits,
    dispatch: (message) => router.dispatch(message),
    identity: identityStore,
    forwardToPrimary: (call, body) => replication.forwardToPrimary(call, body),
  });
  const authorizer = new Authorizer(namespaces, identityStore);
  const wrapping = new ResponseWrapper(tokenManager, namespaces, barrier, config.maxLeaseTtl);
  const audit = new AuditDevices(createView(barrier, ''), logger);

  const seal = new SealLifecycle({
    seal: configuredSeal(config, options.physical, logger, options.unsealShares),
    barrier,
    physical: options.physical,
    bus,
    subjectPrefix,
    announce: (key) => replicas.announce(key),
    createRootToken: (id) => createRootToken(tokens, id),
    logger,
    sealType: config.seal.type,
  });
  const coreView = createView(barrier, 'core/');
  const ceremonies = new KeyCeremonies(seal.seal, coreView, () => createRootToken(tokens));
  const clusterIdentity = new ClusterIdentity(coreView);

  const allMounts = () => namespaces.all().flatMap((namespace) => namespace.allMounts().map(({ mount }) => mount));
  /** The mounts replication's filters can name (not the built-in ones every namespace has), auth mounts under auth/. */
  const mountRefs = (): MountRef[] =>
    namespaces.all().flatMap((namespace) =>
      namespace
        .allMounts()
        .filter(({ mount }) => !engines.forMount(mount)?.builtin)
        .map(({ mount, prefix }) => ({ namespace: namespace.path, path: prefix + mount.path, storagePrefix: mountStoragePrefix(mount) })),
    );
  const replication: Replication = new Replication({
    store: createView(barrier, REPLICATION_STORAGE_PREFIX),
    logger,
    apiAddr: () => config.apiAddr ?? core.apiAddresses[0] ?? '',
    clusterListenAddress: () => config.listeners[0]?.clusterAddress,
    clusterAddr: (bound) => config.clusterAddr ?? `https://${bound}`,
    wrap: (data, ttl, path) => wrapping.wrap(envelope(randomUUID(), { data }), ttl, namespaces.get('')!, path),
    keyring: () => barrier.keyring,
    shareVerifier: () => seal.seal.shareVerifier(),
    replaceStorage: (keyring, entries) => snapshots.replaceForSecondary(keyring, entries),
    mounts: mountRefs,
    namespaces: () => namespaces.all().map((namespace) => ({ path: namespace.path, storagePrefix: Namespace.storagePrefix(namespace.record) })),
    physical: storageCache ?? options.physical,
    shipperLimits: {
      maxEntries: config.replication?.logShipperBufferLength ?? DEFAULT_SHIPPER_LIMITS.maxEntries,
      maxBytes: config.replication?.logShipperBufferSize ?? DEFAULT_SHIPPER_LIMITS.maxBytes,
    },
    localMountUuids: () => allMounts().filter((mount) => mount.local || mount.type === 'cubbyhole').map((mount) => mount.uuid),
    adoptKeyring: (keyring) => seal.installKeyring(keyring),
    storageChanged: (keys) => coherence.replicatedWritesApplied(keys),
    serveForwarded: (call, body) => serveForwarded(call, body),
    sendToOwner: (options.replicationOwner ?? true) === true ? undefined : replicationOwnerClient(bus, subjectPrefix ?? 'svc'),
  });
  // A performance secondary writes only its local keys; the rest it forwards (request/forwarding.ts).
  barrier.setWriteGuard((key) => replication.writable(key));
  const drOperationToken = new GenerateRoot(
    createView(barrier, REPLICATION_STORAGE_PREFIX),
    'dr/generate-operation-token',
    () => replication.drShareAuthority(),
    () => replication.createOperationToken(),
    SERVICE_TOKEN_LENGTH,
    'DR operation token generation',
  );

  // The core's own mounts, present in every namespace and built over the core's state, as in Vault.
  const ownEngineTypes: EngineType[] = [
    { type: 'system', table: 'secret', runsIn: GATEWAY, builtin: true, factory: () => system },
    { type: 'token', table: 'auth', runsIn: GATEWAY, builtin: true, factory: () => createTokenBackend(core) },
    { type: 'cubbyhole', table: 'secret', runsIn: GATEWAY, builtin: true, factory: (_mount, context) => createCubbyholeBackend(context.storage) },
    {
      type: 'identity',
      table: 'secret',
      runsIn: GATEWAY,
      builtin: true,
      factory: (mount, context) =>
        createIdentityBackend({
          store: new IdentityStore(context.storage),
          namespaceId: namespaces.get(mount.namespace)?.record.id ?? '',
          authMount: (accessor) => namespaces.get(mount.namespace)?.authMounts.list().find((auth) => auth.accessor === accessor),
        }),
    },
  ];
  const engines = new EngineRegistry([...ownEngineTypes, ...options.engineTypes]);
  const coreEngines = new EngineHost(GATEWAY, engines.factoriesFor(GATEWAY), barrier, { locks, logger, metrics }, false);
  const plugins = new Plugins(barrier, engines, options.databasePlugins ?? [], config.pluginDirectory, logger, config.maxRequestDurationMs);
  const router = new Router({
    namespaces,
    engines,
    coreEngines,
    plugins: plugins.host,
    localServices,
    barrier,
    bus,
    subjectPrefix,
    requestTimeoutMs: config.maxRequestDurationMs,
    busRequests: metrics.timer('bus.request', 'Engine service requests sent over the bus, by service (round trip)', ['service']),
  });

  const hooks: ReplicaSyncHooks = {
    apply: (keys) =>
      coherence.apply(keys).catch((err: unknown) => {
        logger.warn({ keys: keys.length, err: describeRequestError(err) }, "applying another replica's changes failed");
        throw err;
      }),
    resync: () => coherence.resync(),
  };
  // Workers that open the store themselves follow its change feed; replicas that share it over
  // the network tell each other of their writes (every key when they cache every read).
  const feed = options.physical.changes;
  const replicas = feed ? new StoreFollower(feed, hooks) : new ReplicaSync(bus, subjectPrefix ?? 'svc', storageCache ? () => true : isCachedKey, hooks);
  barrier.onWrite((event) => replicas.noteWrite(event.key));
  const coherence = new CacheCoherence({
    storageCache,
    barrier,
    seal,
    tokens,
    namespaces,
    audit,
    leases,
    replication,
    coreEngines,
    plugins: plugins.host,
    localServices,
    engineServices: () => engines.services(),
    replicas,
    bus,
    subjectPrefix,
    defaultKvVersion: options.defaultKvVersion ?? '1',
  });
  const snapshots = new StorageReplacement({ physical: options.physical, writable: storageCache ?? options.physical, barrier, seal, coherence, replicas, clusterIdentity, logger });
  const mountData = new MountData(barrier, coherence);
  const periodic = new PeriodicFunctions({ namespaces, engines, router, barrier, locks, replicas, isDrSecondary: () => replication.isDrSecondary, logger });
  const ownership = new ReplicationOwnership({ replication, seal, replicas, locks, bus, subjectPrefix: subjectPrefix ?? 'svc', logger, byLease: options.replicationOwner === 'lease' });
  const serveForwarded = forwardedCallServer({ namespaces, router, identity: identityStore, replicas });

  seal.opening.add(() => coherence.load());
  seal.opening.add(() => clusterIdentity.load());
  // A cluster listener that cannot bind must not keep the barrier shut: the status shows the mode, the log why.
  seal.opening.add(() => replication.load().catch((err: unknown) => logger.warn({ err: describeRequestError(err) }, 'replication could not start its cluster link')));
  seal.unsealed.add(() => {
    periodic.start();
    leases.start();
  });
  seal.sealed.add(async () => {
    periodic.stop();
    await replication.stop();
    await leases.stop();
    await plugins.host.closeAll();
    await audit.close();
    coherence.clear();
  });
  seal.storageReplaced.add(async () => {
    await coherence.reloadRestored();
    await replication.load();
  });

  const requestHandler = new RequestHandler({
    seal,
    replicas,
    router,
    tokens,
    revokeToken: (accessor) => tokenManager.revokeTree(accessor),
    authorizer,
    audit: audit.broker,
    leases: leaseLifecycle,
    logins,
    wrapper: wrapping,
    dispatcher: forwardingDispatcher(router, (call, body) => replication.forwardToPrimary(call, body), () => replication.isPerformanceSecondary),
    resolveToken: (value) => replication.resolveWrappingToken(value),
    isDrSecondary: () => replication.isDrSecondary,
    requests: metrics.timer('core.handle_request', 'Requests handled by the gateway, by namespace, mount and operation', ['namespace', 'mount', 'operation']),
  });

  const core: Core = {
    config,
    logger,
    metrics,
    bus,
    barrier,
    seal,
    ceremonies,
    namespaces,
    router,
    tokens,
    tokenManager,
    logins,
    leases,
    leaseLifecycle,
    authorizer,
    wrapping,
    audit,
    replication,
    drOperationToken,
    engines,
    plugins,
    replicas,
    coherence,
    snapshots,
    mountData,
    clusterIdentity,
    periodic,
    requestHandler,
    deleteNamespace: namespaceRemoval({ namespaces, leaseLifecycle, tokens, tokenManager, mountData, barrier }),
    identityStore,
    tokenLimits,
    apiAddresses: [],
    async start() {
      await options.physical.open();
      // Closed again on refusal, so the process can exit: nothing else is running yet.
      await refuseUnfinishedMigration(options.physical).catch(async (err: unknown) => {
        await options.physical.close();
        throw err;
      });
      await seal.joinPeers();
      await replicas.start();
      ownership.start();
      await seal.start();
    },
    async stop() {
      seal.stop();
      periodic.stop();
      await coreEngines.closeAll();
      await plugins.host.closeAll();
      await leases.stop();
      await ownership.stop();
      replicas.stop();
      router.stop();
      await options.physical.close();
    },
  };
  const system = createSystemBackend(core, options.systemPaths);
  coreEngines.register(SYSTEM_MOUNT, system);

  metrics.gauge('core.unsealed', '1 while this gateway is unsealed, 0 otherwise', [], (gauge) => gauge.set(seal.state === 'unsealed' ? 1 : 0));
  metrics.gauge('expire.num_leases', 'Leases in the expiration queue, on the gateway that runs it (0 on the others)', [], (gauge) => gauge.set(leases.queueSize));
  metrics.usageGauge('token.count', 'Live service tokens (a usage gauge: counted at most once per usage_gauge_period)', async () => {
    seal.assertUnsealed();
    return (await tokens.allAccessors()).length;
  });
  return core;
}
