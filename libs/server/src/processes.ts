import type { Logger } from 'pino';
import { createBus, type Bus } from '@svc/bus';
import type { ServerConfig } from '@svc/config';
import { Core, RequestPipeline, createSystemBackend, serviceHealthHandler, startHttpFrontend, type HttpFrontend } from '@svc/core';
import { EngineHost } from '@svc/engine-host';
import { createLockManager, type LockManager } from '@svc/locks';
import { KeyringReceiver } from '@svc/seal';
import { Barrier, createPhysical } from '@svc/storage';
import { DATABASE_PLUGIN_VERSIONS, ENGINE_TYPES, engineTypes } from './engines';
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

/** Engine services named by the config that this process hosts itself (all-in-one). */
function hostedServices(config: ServerConfig, distributed: boolean): string[] {
  if (distributed) return [];
  const services = engineTypes.services();
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
    databasePlugins: DATABASE_PLUGIN_VERSIONS,
    localServices,
    systemBackend: createSystemBackend,
    defaultKvVersion: options.defaultKvVersion,
  });
  for (const service of hostedServices(config, options.distributed)) {
    localServices.set(service, new EngineHost(service, engineTypes.factoriesFor(service), core.barrier, { locks: shared.locks, logger }));
  }
  await core.start();
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
      await Promise.all([...localServices.values()].map((host) => host.closeAll()));
      await core.stop();
    },
  };
}

/** An engine service: its host, whose requests the service's transport delivers. */
export interface RunningService extends RunningProcess {
  host: EngineHost;
}

/** Builds and starts an engine service (see `startService`) on the process's loggers and connections. */
export async function runService(config: ServerConfig, service: string, { logger, flush }: Loggers, shared: Shared): Promise<RunningService> {
  const subjectPrefix = config.bus?.subjectPrefix;
  const physical = createPhysical(config.storage);
  await physical.open();
  const barrier = new Barrier(physical);
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
  const host = new EngineHost(service, engineTypes.factoriesFor(service), barrier, { locks: shared.locks, logger });
  const cluster = host.follow(shared.bus, subjectPrefix);
  // A listener, when configured, serves the service's health to orchestrators' probes.
  const health = serviceHealthHandler({
    service,
    get sealed() {
      return barrier.sealed;
    },
    get busConnected() {
      return shared.bus.connected;
    },
  });
  const frontend = config.listeners.length > 0 ? await startHttpFrontend(health, config.listeners) : undefined;
  const addresses = frontend?.listeners.map((l) => l.address) ?? [];
  logger.info({ service, storage: physical.kind, addresses }, 'service started');
  flush();
  return {
    logger,
    addresses,
    host,
    stop: async () => {
      await frontend?.close();
      cluster.unsubscribe();
      await host.closeAll();
      receiver.close();
      await physical.close();
    },
  };
}
