import { ServiceError } from '@svc/api-contract';
import { mysqlPlugin } from './mysql';
import type { PluginDefinition } from './plugin';
import { postgresqlPlugin } from './postgresql';
import { redisPlugin } from './redis';

export * from './plugin';

/** The builtin plugins by name; a new database is one more entry here. */
export const PLUGINS: ReadonlyMap<string, PluginDefinition> = new Map(
  [postgresqlPlugin, mysqlPlugin, redisPlugin].map((plugin) => [plugin.name, plugin]),
);

/** The plugin for a connection; an unknown name or a version this build does not carry is a 400. */
export function findPlugin(name: string, version = ''): PluginDefinition {
  const plugin = PLUGINS.get(name);
  if (!plugin) throw ServiceError.badRequest(`field "plugin_name": unknown plugin "${name}"; available: ${[...PLUGINS.keys()].join(', ')}`);
  if (version !== '' && version !== plugin.version) {
    throw ServiceError.badRequest(`field "plugin_version": ${name} is available only in version ${plugin.version}`);
  }
  return plugin;
}
