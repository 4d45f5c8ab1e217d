/**
 * Open plugins (connection pools) of one backend instance, i.e. one mount in one service replica.
 * Each is keyed by a fingerprint of the stored connection, so a change made through another replica
 * (a new password after rotate-root, an edited URL, a delete) closes and reopens the pool here too.
 */
import { createHash } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';
import { talkToDatabase } from './errors';
import { findPlugin, type DatabasePlugin, type PluginDefinition } from './plugins';
import { CONNECTIONS, type ConnectionRecord } from './records';

export interface OpenConnection {
  record: ConnectionRecord;
  definition: PluginDefinition;
  plugin: DatabasePlugin;
}

function fingerprint(record: ConnectionRecord): string {
  return createHash('sha256').update(JSON.stringify(record)).digest('hex');
}

/** Opens a plugin for a connection record; settings it cannot use are a 400 naming the field. */
export async function openPlugin(record: ConnectionRecord): Promise<{ definition: PluginDefinition; plugin: DatabasePlugin }> {
  const definition = findPlugin(record.plugin_name);
  const settings = { details: record.details, username: record.username, password: record.password, disableEscaping: record.disable_escaping };
  const plugin = await talkToDatabase('open connection', [record.password], async () => definition.open(settings));
  return { definition, plugin };
}

export class ConnectionRegistry {
  private readonly open = new Map<string, { fingerprint: string; connection: Promise<OpenConnection> }>();

  /** The stored connection with an open plugin; an unknown name is a 400. */
  async get(storage: StorageView, name: string): Promise<OpenConnection> {
    const record = await CONNECTIONS.get(storage, name);
    if (!record) {
      await this.close(name);
      throw ServiceError.badRequest(`unknown database connection "${name}"`);
    }
    const current = fingerprint(record);
    const cached = this.open.get(name);
    if (cached?.fingerprint === current) return cached.connection;
    if (cached) await this.close(name);
    const connection = openPlugin(record).then(({ definition, plugin }) => ({ record, definition, plugin }));
    this.open.set(name, { fingerprint: current, connection });
    // A plugin that failed to open is not cached: the next request tries again.
    connection.catch(() => {
      if (this.open.get(name)?.connection === connection) this.open.delete(name);
    });
    return connection;
  }

  /** Keeps a plugin that was opened (and verified) while writing `record`. */
  async install(name: string, record: ConnectionRecord, opened: { definition: PluginDefinition; plugin: DatabasePlugin }): Promise<void> {
    await this.close(name);
    this.open.set(name, { fingerprint: fingerprint(record), connection: Promise.resolve({ record, ...opened }) });
  }

  /** Closes the connection's pool; the next use reopens it from storage. */
  async close(name: string): Promise<void> {
    const cached = this.open.get(name);
    if (!cached) return;
    this.open.delete(name);
    const connection = await cached.connection.catch(() => undefined);
    await connection?.plugin.close().catch(() => undefined);
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.open.keys()].map((name) => this.close(name)));
  }
}

/** `allowed_roles` of the connection must name the role or be `*`. */
export function checkRoleAllowed(record: ConnectionRecord, connectionName: string, roleName: string): void {
  if (record.allowed_roles.includes('*') || record.allowed_roles.includes(roleName)) return;
  throw ServiceError.badRequest(`role "${roleName}" is not in the allowed_roles of connection "${connectionName}"`);
}
