import type { ServiceName } from '@svc/config';
import { EngineRegistry } from '@svc/core';
import type { BackendFactory } from '@svc/engine-host';
import { kvBackendFactory } from '@svc/engine-kv';
import { transitBackendFactory } from '@svc/engine-transit';
import { databaseBackendFactory } from '@svc/engine-database';
import { cloudBackendFactory } from '@svc/engine-cloud';

/**
 * Every mount type this build knows, and where it runs. Service engines list their backend
 * factories in SERVICE_ENGINES so a service process (or the all-in-one process) can host them.
 */
export const SERVICE_ENGINES: Partial<Record<ServiceName, Record<string, BackendFactory>>> = {
  transit: { transit: transitBackendFactory },
  database: { database: databaseBackendFactory },
  cloud: { cloud: cloudBackendFactory },
};

export function engineRegistry(): EngineRegistry {
  const registry = new EngineRegistry();
  // Key/value secrets are core: they run in the gateway process.
  registry.register('kv', { kind: 'core', table: 'secret', create: kvBackendFactory });
  for (const [service, factories] of Object.entries(SERVICE_ENGINES)) {
    for (const type of Object.keys(factories ?? {})) {
      registry.register(type, { kind: 'service', table: 'secret', service: service as ServiceName });
    }
  }
  return registry;
}
