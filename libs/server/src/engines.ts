import { EngineRegistry, GATEWAY, type EngineType } from '@svc/engine-host';
import { kvBackendFactory } from '@svc/engine-kv';
import { transitBackendFactory } from '@svc/engine-transit';
import { databaseBackendFactory, PLUGINS as DATABASE_PLUGINS } from '@svc/engine-database';
import { cloudBackendFactory } from '@svc/engine-cloud';
import { approleBackendFactory } from '@svc/auth-approle';
import { userpassBackendFactory } from '@svc/auth-userpass';

/**
 * The mount types of this build, one entry each: adding an engine or auth method is one entry
 * here (and, for a type that runs in its own service, one app under apps/). The core adds its own
 * mounts (system, token, cubbyhole), which it builds over its state.
 */
export const ENGINE_TYPES: readonly EngineType[] = [
  { type: 'kv', table: 'secret', runsIn: GATEWAY, factory: kvBackendFactory },
  { type: 'transit', table: 'secret', runsIn: 'transit', factory: transitBackendFactory },
  { type: 'database', table: 'secret', runsIn: 'database', factory: databaseBackendFactory },
  { type: 'cloud', table: 'secret', runsIn: 'cloud', factory: cloudBackendFactory },
  // Auth methods run in the gateway: a login needs the token store, which lives there.
  { type: 'approle', table: 'auth', runsIn: GATEWAY, factory: approleBackendFactory },
  { type: 'userpass', table: 'auth', runsIn: GATEWAY, factory: userpassBackendFactory },
];

/** The registry of the types above, for what needs no core: service processes, flags, configuration. */
export const engineTypes = new EngineRegistry(ENGINE_TYPES);

/** What `-service=` and the configuration's `services` accept: the gateway and every engine service. */
export function serviceNames(): string[] {
  return [GATEWAY, ...engineTypes.services()];
}

/** The database engine's built-in plugins, for the plugin catalog's listing. */
export const DATABASE_PLUGIN_VERSIONS = [...DATABASE_PLUGINS.values()].map(({ name, version }) => ({ name, version }));
