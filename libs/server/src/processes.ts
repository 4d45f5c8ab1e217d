import type { Logger } from 'pino';
import { createBus, type Bus } from '@svc/bus';
import type { ServerConfig } from '@svc/config';
import { composeCore, type Core } from '@svc/core';
import { DEFAULT_UI_DIRECTORY, RequestPipeline, UiAssets, serviceHealthHandler, startHttpFrontend, type HttpFrontend } from '@svc/edge';
import { EngineHost, writableOutsideReadOnlyRequests } from '@svc/engine-host';
import { toolPaths } from '@svc/engine-transit';
import { BusLockManager, createLockManager, type LockManager } from '@svc/locks';
import { Metrics } from '@svc/metrics';
import { KeyringReceiver, PrimaryUnsealProgress } from '@svc/seal';
import { Barrier, createPhysical, createView, MeteredPhysical, type Physical } from '@svc/storage';
import { DATABASE_PLUGIN_VERSIONS, ENGINE_TYPES, engineTypes, WORKER_SERVICES, type WorkerContext } from './engines';
import { serviceProcesses } from './service-names';
import type { RunningProcess } from './running-process';
import type { Loggers } from './logger';
import { primaryBus, workerRole, workerStorage } from './workers';

export type { RunningProcess };

/** What every process connects to: the bus and the lock manager (closed after the process stops). */
export interface Shared {
  bus: Bus;
  locks: LockManager;
  /**
   * In a gateway worker (`svc server` with several workers): the bus to the primary process, which
   * holds the lock table and the storage only one process may open when they are not configured
   * elsewhere; it is also the replicas' bus when there is no NATS.
   */
  primary?: Bus;
}

export async function connectShared(config: ServerConfig, service: string, logger: Logger): Promise<Shared> {
  const primary = workerRole() ? primaryBus() : undefined;
  const bus = config.bus || !primary ? await createBus(config.bus ? { ...config.bus, name: `svc-${service}` } : undefined, logger) : primary;
  const locks = config.locks || !primary ? createLockManager(config.locks) : new BusLockManager(primary);
  return { bus, locks, primary };
}

export interface GatewayOptions {
  distributed: boolean;
  /**
   * Whether this process owns the cluster's replication (see CoreOptions.replicationOwner); by
   * default an all-in-one server or its first worker does, a gateway of the distributed topology
   * does not (the replication service does).
   */
  replicationOwner?: boolean | 'lease';
  defaultKvVersion?: '1' | '2';
  beforeListen?: (core: Core) => Promise<void>;
}

/** Storage as this process opens it: beside the other workers in a worker, else on its own. */
function storageOf(config: ServerConfig, shared: Shared) {
  return shared.primary ? workerStorage(config) : createPhysical(config.storage);
}

/** Engine services named by the config that this process hosts itself (all-in-one). */
function hostedServices(config: ServerConfig, distributed: boolean): string[] {
  if (distributed) return [];
  const services = serviceProcesses();
  return config.services ? services.filter((name) => config.services?.includes(name)) : services;
}

/** Logs the configuration's warnings (unknown fields, ignored variables), each naming its file and field. */
export function logConfigWarnings(config: ServerConfig, logger: Logger): void {
  for (const warning of config.warnings ?? []) logger.warn(warning);
}

/** The `reload` of a process whose audit files (none for an engine service) `reopenAudit` reopens. */
function reloader({ logger, setLevel }: Loggers, reopenAudit: () => Promise<string[]>): RunningProcess['reload'] {
  return async (config) => {
    if (config) {
      logConfigWarnings(config, logger);
      setLevel(config.logLevel);
    }
    const auditDevices = await reopenAudit();
    logger.info({ ...(config ? { log_level: config.logLevel } : {}), audit_devices_reopened: auditDevices }, 'reloaded on SIGHUP');
  };
}

/** The configured storage, its operations timed in the process's metrics. */
function metered(physical: Physical, metrics: Metrics): Physical {
  return new MeteredPhysical(physical, metrics.timer('storage.operation', 'Physical storage operations, by backend and operation', ['backend', 'operation']));
}

/** Builds and starts the gateway's parts (see `startGateway`) on the process's loggers and connections. */
export async function runGateway(config: ServerConfig, options: GatewayOptions, loggers: Loggers, shared: Shared): Promise<RunningProcess> {
  const { logger, logRequest, flush } = loggers;
  const metrics = new Metrics(config.telemetry);
  const physical = metered(storageOf(config, shared), metrics);
  const localServices = new Map<string, EngineHost>();
  const role = workerRole();
  const core = composeCore({
    config,
    physical,
    ...shared,
    logger,
    engineTypes: ENGINE_TYPES,
    databasePlugins: DATABASE_PLUGIN_VERSIONS,
    localServices,
    defaultKvVersion: options.defaultKvVersion,
    metrics,
    unsealShares: shared.primary && new PrimaryUnsealProgress(shared.primary),
    replicationOwner: options.replicationOwner ?? (!options.distributed && (role?.index ?? 0) === 0),
    systemPaths: toolPaths('tools/'),
  });
  const hosted = hostedServices(config, options.distributed);
  for (const service of hosted) {
    localServices.set(service, new EngineHost(service, engineTypes.factoriesFor(service), core.barrier, { locks: shared.locks, logger, metrics }));
  }
  // The other workers host the same services: they hear of each other's writes as service replicas
  // do, or from the store's change feed when they all open it (the core applies it to these hosts).
  const followed = role ? [...localServices.values()].map((host) => host.follow(shared.bus, config.bus?.subjectPrefix, !physical.changes)) : [];
  await core.start();
  const workers = startWorkers(hosted, { physical, barrier: core.barrier, storage: createView(core.barrier, ''), locks: shared.locks, logger, config, sealed: () => core.barrier.sealed, metrics });
  await options.beforeListen?.(core);
  const ui = config.ui ? new UiAssets(DEFAULT_UI_DIRECTORY) : undefined;
  const frontend: HttpFrontend = await startHttpFrontend(new RequestPipeline(core.requestHandler, logger, logRequest, metrics, ui), config.listeners);
  const addresses = frontend.listeners.map((l) => l.address);
  // Activation tokens carry this address when api_addr does not say otherwise.
  core.apiAddresses = addresses.map((address, i) => `${config.listeners[i]?.tlsDisable === false ? 'https' : 'http'}://${address}`);
  const started = { addresses, storage: physical.kind, bus: shared.bus.kind, locks: shared.locks.kind };
  if (options.replicationOwner) logger.info(started, 'replication service started');
  else if (role) logger.info({ ...started, worker: role.index }, 'gateway worker started');
  else logger.info(started, 'gateway started');
  flush();
  return {
    logger,
    addresses,
    core,
    reload: reloader(loggers, () => core.audit.reopen()),
    stop: async () => {
      logger.info('gateway stopping');
      await frontend.close();
      await Promise.all(workers.map((worker) => worker.stop()));
      followed.forEach((subscription) => subscription.unsubscribe());
      await Promise.all([...localServices.values()].map((host) => host.closeAll()));
      await core.stop();
      logger.info('gateway stopped');
    },
  };
}

/** Starts the background work of those of `services` that are worker services. */
function startWorkers(services: readonly string[], context: WorkerContext): { stop(): Promise<void> }[] {
  return WORKER_SERVICES.filter((worker) => services.includes(worker.name)).map((worker) => worker.start(context));
}

/** An engine service: its host, whose requests the service's transport delivers. */
export interface RunningService extends RunningProcess {
  host: EngineHost;
}

/** Builds and starts an engine service (see `startService`) on the process's loggers and connections. */
export async function runService(config: ServerConfig, service: string, loggers: Loggers, shared: Shared): Promise<RunningService> {
  const { logger, flush } = loggers;
  const subjectPrefix = config.bus?.subjectPrefix;
  const metrics = new Metrics(config.telemetry);
  const physical = metered(createPhysical(config.storage), metrics);
  await physical.open();
  const barrier = new Barrier(physical);
  // On a performance secondary the gateway marks requests to replicated mounts; this process has no replication state of its own.
  barrier.setWriteGuard(writableOutsideReadOnlyRequests);
  const receiver = new KeyringReceiver(shared.bus, {
    subjectPrefix,
    onError: () => logger.warn('keyring request failed; retrying on the next announcement'),
  });
  receiver.onChange((keyring) => {
    if (keyring) barrier.unseal(keyring);
    else barrier.seal();
    logger.info({ sealed: !keyring }, keyring ? 'keyring received' : 'keyring dropped');
  });
  await receiver.start();
  const host = new EngineHost(service, engineTypes.factoriesFor(service), barrier, { locks: shared.locks, logger, metrics });
  const cluster = host.follow(shared.bus, subjectPrefix);
  const workers = startWorkers([service], { physical, barrier, storage: createView(barrier, ''), locks: shared.locks, logger, config, sealed: () => barrier.sealed, metrics });
  // A listener, when configured, serves the service's health to orchestrators' probes, and its metrics.
  const health = serviceHealthHandler({
    service,
    get sealed() {
      return barrier.sealed;
    },
    get busConnected() {
      return shared.bus.connected;
    },
  }, metrics);
  const frontend = config.listeners.length > 0 ? await startHttpFrontend(health, config.listeners) : undefined;
  const addresses = frontend?.listeners.map((l) => l.address) ?? [];
  logger.info({ storage: physical.kind, addresses }, 'service started');
  flush();
  return {
    logger,
    addresses,
    host,
    reload: reloader(loggers, async () => []),
    stop: async () => {
      logger.info('service stopping');
      await frontend?.close();
      await Promise.all(workers.map((worker) => worker.stop()));
      cluster.unsubscribe();
      await host.closeAll();
      receiver.close();
      await physical.close();
      logger.info('service stopped');
    },
  };
}
