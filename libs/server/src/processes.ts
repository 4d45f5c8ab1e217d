import type { Logger } from 'pino';
import { createBus, type Bus } from '@svc/bus';
import type { ServerConfig } from '@svc/config';
import { Core, RequestPipeline, createSystemBackend, serviceHealthHandler, startHttpFrontend, type HttpFrontend } from '@svc/core';
import { EngineHost } from '@svc/engine-host';
import { createLockManager, type LockManager } from '@svc/locks';
import { KeyringReceiver } from '@svc/seal';
import { SnapshotScheduler } from '@svc/snapshot';
import { Barrier, createPhysical, type Physical } from '@svc/storage';
import { ENGINE_TYPES, WORKER_SERVICES, engineTypes, hostableServices } from './engines';
import type { Loggers } from './logger';

export interface RunningProcess {
  logger: Logger;
  /** Addresses the HTTP listeners bound (gateway only). */
  addresses: string[];
  core?: Core;
  stop(): Promise<void>;
}

/** What every process connects to: the bus and the lock manager (closed after the process stops). */
export interface Shared {
  bus: Bus;
  locks: LockManager;
}

export async function connectShared(config: ServerConfig, service: string, logger: Logger): Promise<Shared> {
  const bus = await createBus(config.bus ? { ...config.bus, name: `svc-${service}` } : undefined, logger);
  const locks = createLockManager(config.locks);
  return { bus, locks };
}

export interface GatewayOptions {
  distributed: boolean;
  defaultKvVersion?: '1' | '2';
  beforeListen?: (core: Core) => Promise<void>;
}

/** Services named by the config that this process hosts itself (all-in-one). */
function hostedServices(config: ServerConfig, distributed: boolean): string[] {
  if (distributed) return [];
  const services = hostableServices();
  return config.services ? services.filter((name) => config.services?.includes(name)) : services;
}

/** Builds and starts the gateway's parts (see `startGateway`) on the process's loggers and connections. */
export async function runGateway(config: ServerConfig, options: GatewayOptions, { logger, logRequest, flush }: Loggers, shared: Shared): Promise<RunningProcess> {
  const physical = createPhysical(config.storage);
  const localServices = new Map<string, EngineHost>();
  const core = new Core({
    config,
    physical,
    ...shared,
    logger,
    engineTypes: ENGINE_TYPES,
    localServices,
    systemBackend: createSystemBackend,
    defaultKvVersion: options.defaultKvVersion,
  });
  const hosted = hostedServices(config, options.distributed);
  for (const service of hosted.filter((name) => !WORKER_SERVICES.includes(name))) {
    localServices.set(service, new EngineHost(service, engineTypes.factoriesFor(service), core.barrier, { locks: shared.locks, logger }));
  }
  const scheduler = hosted.includes('snapshot') ? new SnapshotScheduler({ physical, barrier: core.barrier, locks: shared.locks, logger }) : undefined;
  await core.start();
  scheduler?.start();
  await options.beforeListen?.(core);
  const frontend: HttpFrontend = await startHttpFrontend(new RequestPipeline(core.requestHandler(), logger, logRequest), config.listeners);
  const addresses = frontend.listeners.map((l) => l.address);
  logger.info({ addresses, storage: physical.kind, bus: shared.bus.kind, locks: shared.locks.kind }, 'gateway started');
  flush();
  return {
    logger,
    addresses,
    core,
    stop: async () => {
      await frontend.close();
      await scheduler?.stop();
      await Promise.all([...localServices.values()].map((host) => host.closeAll()));
      await core.stop();
    },
  };
}

/** An engine service: its host, whose requests the service's transport delivers. */
export interface RunningService extends RunningProcess {
  host: EngineHost;
}

/** A service's storage: its own connection, and a barrier opened by the keyring gateways hand it while the cluster is unsealed. */
interface ServiceStorage {
  physical: Physical;
  barrier: Barrier;
  close(): Promise<void>;
}

async function openServiceStorage(config: ServerConfig, { logger }: Loggers, shared: Shared): Promise<ServiceStorage> {
  const physical = createPhysical(config.storage);
  await physical.open();
  const barrier = new Barrier(physical);
  const receiver = new KeyringReceiver(shared.bus, {
    subjectPrefix: config.bus?.subjectPrefix,
    onError: () => logger.warn('keyring request failed; retrying on the next announcement'),
  });
  receiver.onChange((keyring) => {
    if (keyring) barrier.unseal(keyring);
    else barrier.seal();
    logger.info({ sealed: !keyring }, keyring ? 'keyring received' : 'keyring dropped');
  });
  await receiver.start();
  return {
    physical,
    barrier,
    close: async () => {
      receiver.close();
      await physical.close();
    },
  };
}

/** A listener, when configured, serves the service's health to orchestrators' probes. */
async function startServiceHealth(config: ServerConfig, service: string, barrier: Barrier, shared: Shared): Promise<HttpFrontend | undefined> {
  const health = serviceHealthHandler({
    service,
    get sealed() {
      return barrier.sealed;
    },
    get busConnected() {
      return shared.bus.connected;
    },
  });
  return config.listeners.length > 0 ? startHttpFrontend(health, config.listeners) : undefined;
}

/** Builds and starts an engine service (see `startService`) on the process's loggers and connections. */
export async function runService(config: ServerConfig, service: string, loggers: Loggers, shared: Shared): Promise<RunningService> {
  const { logger, flush } = loggers;
  const storage = await openServiceStorage(config, loggers, shared);
  const host = new EngineHost(service, engineTypes.factoriesFor(service), storage.barrier, { locks: shared.locks, logger });
  const cluster = host.follow(shared.bus, config.bus?.subjectPrefix);
  const frontend = await startServiceHealth(config, service, storage.barrier, shared);
  const addresses = frontend?.listeners.map((l) => l.address) ?? [];
  logger.info({ service, storage: storage.physical.kind, addresses }, 'service started');
  flush();
  return {
    logger,
    addresses,
    host,
    stop: async () => {
      await frontend?.close();
      cluster.unsubscribe();
      await host.closeAll();
      await storage.close();
    },
  };
}

/**
 * The snapshot service: the automated snapshot scheduler over the service's own storage
 * connection. It reads the store directly (ciphertext) and uses the keyring it is handed only to
 * read the configurations and seal each archive's checksums, so no key material or snapshot
 * crosses the bus.
 */
export async function runSnapshotService(config: ServerConfig, loggers: Loggers, shared: Shared): Promise<RunningProcess> {
  const { logger, flush } = loggers;
  const storage = await openServiceStorage(config, loggers, shared);
  const scheduler = new SnapshotScheduler({ physical: storage.physical, barrier: storage.barrier, locks: shared.locks, logger });
  scheduler.start();
  const frontend = await startServiceHealth(config, 'snapshot', storage.barrier, shared);
  const addresses = frontend?.listeners.map((l) => l.address) ?? [];
  logger.info({ service: 'snapshot', storage: storage.physical.kind, addresses }, 'service started');
  flush();
  return {
    logger,
    addresses,
    stop: async () => {
      await frontend?.close();
      await scheduler.stop();
      await storage.close();
    },
  };
}
