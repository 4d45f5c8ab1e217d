import { GATEWAY } from '@svc/engine-host';

/**
 * The processes of the distributed topology, by name, apart from what runs in them (engines.ts):
 * what `-service=` and the configuration's `services` accept is known without loading any engine.
 */

/** The engine services: each hosts the mount types whose `runsIn` names it. */
export const ENGINE_SERVICES = ['auth-cloud', 'cloud', 'database', 'transit'] as const;

/** The services that serve no mount type but run background work over storage. */
export const WORKER_SERVICE_NAMES = ['snapshot', 'sync'] as const;

/** The process of the distributed topology that owns the cluster's replication (apps/replication). */
export const REPLICATION_SERVICE = 'replication';

/** Every service other than the gateway: the engine services and the worker services, sorted. */
export function serviceProcesses(): string[] {
  return [...ENGINE_SERVICES, ...WORKER_SERVICE_NAMES].sort();
}

/** What `-service=` and the configuration's `services` accept: the gateway, the replication service and every other service. */
export function serviceNames(): string[] {
  return [GATEWAY, REPLICATION_SERVICE, ...serviceProcesses()];
}
