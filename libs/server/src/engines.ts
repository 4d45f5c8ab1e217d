import type { ServiceName } from '@svc/config';
import { EngineRegistry } from '@svc/core';
import type { BackendFactory } from '@svc/engine-host';
import { kvBackendFactory } from '@svc/engine-kv';
import { transitBackendFactory } from '@svc/engine-transit';
import { databaseBackendFactory } from '@svc/engine-database';
import { approleBackendFactory } from '@svc/auth-approle';
import { userpassBackendFactory } from '@svc/auth-userpass';

/**
 * Every mount type this build knows, and where it runs. Service engines list their backend
 * factories in SERVICE_ENGINES so a service process (or the all-in-one process) can host them.
 */
export const SERVICE_ENGINES: Partial<Record<ServiceName, Record<string, BackendFactory>>> = {
  transit: { transit: transitBackendFactory },
  database: { database: databaseBackendFactory },
};

export function engineRegistry(): EngineRegistry {
  const registry = new EngineRegistry();
  // Key/value secrets are core: they run in the gateway process.
  registry.register('kv', { kind: 'core', table: 'secret', create: kvBackendFactory });
  // Auth methods run in the gateway too: a login needs the token store, which lives there.
  registry.register('approle', { kind: 'core', table: 'auth', create: approleBackendFactory });
  registry.register('userpass', { kind: 'core', table: 'auth', create: userpassBackendFactory });
  for (const [service, factories] of Object.entries(SERVICE_ENGINES)) {
    for (const type of Object.keys(factories ?? {})) {
      registry.register(type, { kind: 'service', table: 'secret', service: service as ServiceName });
    }
  }
  return registry;
}
