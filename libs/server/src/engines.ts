import { EngineRegistry, GATEWAY, type EngineType } from '@svc/engine-host';
import { kvBackendFactory } from '@svc/engine-kv';
import { transitBackendFactory } from '@svc/engine-transit';
import { databaseBackendFactory, PLUGINS as DATABASE_PLUGINS } from '@svc/engine-database';
import { cloudBackendFactory } from '@svc/engine-cloud';
import { approleBackendFactory } from '@svc/auth-approle';
import type { ServerConfig } from '@svc/config';
import type { LockManager } from '@svc/locks';
import type { Metrics } from '@svc/metrics';
import type { Barrier, Physical, StorageView } from '@svc/storage';
import { StoredReplicationState } from '@svc/replication';
import { SnapshotScheduler } from '@svc/snapshot';
import { SyncWorker } from '@svc/sync-worker';
import type { Logger } from 'pino';
import { userpassBackendFactory } from '@svc/auth-userpass';
import { cloudAuthBackendFactory } from '@svc/auth-cloud';
import { kubernetesBackendFactory } from '@svc/auth-kubernetes';
import { jwtBackendFactory } from '@svc/auth-jwt';

/**
 * The mount types of this build, one entry each: adding an engine or auth method is one entry
 * here (and, for a type that runs in its own service, one app under apps/). The core adds its own
 * mounts (system, token, cubbyhole), which it builds over its state.
 */
export const ENGINE_TYPES: readonly EngineType[] = [
  // Vault's names: "kv-v1"/"kv-v2" enable kv of that version, "aws" the cloud engine and method.
  { type: 'kv', table: 'secret', runsIn: GATEWAY, factory: kvBackendFactory, variants: { 'kv-v1': { version: '1' }, 'kv-v2': { version: '2' } } },
  { type: 'transit', table: 'secret', runsIn: 'transit', factory: transitBackendFactory },
  { type: 'database', table: 'secret', runsIn: 'database', factory: databaseBackendFactory },
  { type: 'cloud', table: 'secret', runsIn: 'cloud', factory: cloudBackendFactory, aliases: ['aws'] },
  // The gateway makes the token of any login: approle and userpass run beside it; the methods that
  // ask an outside party (the cloud provider, a Kubernetes API server, an identity provider) run in
  // the auth-cloud service, answering logins over the bus, so a slow party never holds up the gateway.
  { type: 'approle', table: 'auth', runsIn: GATEWAY, factory: approleBackendFactory },
  { type: 'userpass', table: 'auth', runsIn: GATEWAY, factory: userpassBackendFactory },
  { type: 'cloud', table: 'auth', runsIn: 'auth-cloud', factory: cloudAuthBackendFactory, aliases: ['aws'] },
  { type: 'kubernetes', table: 'auth', runsIn: 'auth-cloud', factory: kubernetesBackendFactory },
  // One method, two names: "jwt" for tokens handed over directly, "oidc" for people signing in.
  { type: 'jwt', table: 'auth', runsIn: 'auth-cloud', factory: jwtBackendFactory, aliases: ['oidc'] },
];

/** The registry of the types above, for what needs no core: service processes, flags, configuration. */
export const engineTypes = new EngineRegistry(ENGINE_TYPES);

/** What a worker service runs on: the physical storage and its barrier (and a view of the barrier's root), locks, a logger, the configuration. */
export interface WorkerContext {
  physical: Physical;
  barrier: Barrier;
  storage: StorageView;
  locks: LockManager;
  logger: Logger;
  config: ServerConfig;
  sealed(): boolean;
  metrics: Metrics;
}

/** A service that serves no mount type but runs background work over storage (its own app, and a module of all-in-one). */
export interface WorkerService {
  name: string;
  start(context: WorkerContext): { stop(): Promise<void> };
}

/** Background work that writes waits on a DR secondary until a promotion. */
async function drSecondaryNow(state: StoredReplicationState): Promise<boolean> {
  await state.refresh();
  return state.isDrSecondary;
}

export const WORKER_SERVICES: readonly WorkerService[] = [
  {
    name: 'sync',
    start: ({ barrier, storage, locks, logger, config, sealed, metrics }) => {
      // In its own process the barrier has no replication state: the worker reads it from storage before each pass.
      const replication = new StoredReplicationState(storage);
      const worker = new SyncWorker({
        storage,
        locks,
        logger,
        endpoints: config.providerEndpoints,
        sealed,
        writable: (key) => barrier.canWrite(key) && replication.writable(key),
        metrics,
        paused: () => drSecondaryNow(replication),
      });
      worker.start();
      return worker;
    },
  },
  {
    // The automated snapshots: reads the ciphertext of the whole storage directly, so no snapshot crosses the bus.
    name: 'snapshot',
    start: ({ physical, barrier, storage, locks, logger, metrics }) => {
      const replication = new StoredReplicationState(storage);
      const scheduler = new SnapshotScheduler({ physical, barrier, locks, logger, metrics, paused: () => drSecondaryNow(replication) });
      scheduler.start();
      return scheduler;
    },
  },
];

/** The database engine's built-in plugins, for the plugin catalog's listing. */
export const DATABASE_PLUGIN_VERSIONS = [...DATABASE_PLUGINS.values()].map(({ name, version }) => ({ name, version }));
