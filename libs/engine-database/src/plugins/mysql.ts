import type { Socket } from 'node:net';
import type { Pool, PoolConnection, PoolOptions, QueryOptions } from 'mysql2/promise';
import { DATABASE_TIMEOUT_MS, InvalidSettingsError, type ConnectionSettings, type PluginDefinition, type UpdateUserRequest } from './plugin';
import { SqlPlugin, sqlPluginDefinition } from './sql-plugin';
import { renderConnectionUrl, renderStatements, sqlTimestamp } from './sql-statements';

// Vault's form `user:pass@tcp(host:port)/db?params`.
const GO_DSN = /^(?:(?<userinfo>.*)@)?tcp\((?<address>[^)]*)\)\/(?<database>[^?]*)(?:\?.*)?$/s;

/** Connection options from a MySQL URL (mysql://) or a Go driver DSN; credentials percent-decoded unless escaping is off. */
export function mysqlConnectionOptions(url: string, decode: boolean): PoolOptions {
  const unescape = (value: string | undefined): string | undefined => {
    if (value === undefined || !decode) return value;
    try {
      return decodeURIComponent(value);
    } catch {
      return value;
    }
  };
  if (url.startsWith('mysql://')) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new InvalidSettingsError('connection_url', 'connection_url is not a valid mysql:// URL');
    }
    return {
      host: parsed.hostname,
      port: Number(parsed.port || 3306),
      user: unescape(parsed.username),
      password: unescape(parsed.password),
      database: parsed.pathname.slice(1) || undefined,
    };
  }
  const dsn = GO_DSN.exec(url)?.groups;
  if (!dsn) throw new InvalidSettingsError('connection_url', 'connection_url must look like user:pass@tcp(host:port)/ or mysql://user:pass@host:port/');
  const [host, port] = dsn.address.split(':');
  const separator = (dsn.userinfo ?? '').indexOf(':');
  const userinfo = dsn.userinfo ?? '';
  return {
    host: host || '127.0.0.1',
    port: Number(port || 3306),
    user: unescape(separator < 0 ? userinfo : userinfo.slice(0, separator)),
    password: separator < 0 ? undefined : unescape(userinfo.slice(separator + 1)),
    database: dsn.database || undefined,
  };
}

/** A statement with the plugins' deadline: one the database does not answer fails (mysql2 then closes that connection). */
function bounded(sql: string, values?: unknown[]): QueryOptions {
  return { sql, values, timeout: DATABASE_TIMEOUT_MS };
}

class MysqlPlugin extends SqlPlugin<Pool> {
  constructor(settings: ConnectionSettings, createPool: (options: PoolOptions) => Pool) {
    const url = renderConnectionUrl(String(settings.details.connection_url ?? ''), settings.username, settings.password, settings.disableEscaping);
    super(
      createPool({
        ...mysqlConnectionOptions(url, !settings.disableEscaping),
        connectionLimit: Number(settings.details.max_open_connections ?? 4),
        connectTimeout: DATABASE_TIMEOUT_MS,
      }),
    );
    // Pooled connections must not keep a stopping process alive (pg's allowExitOnIdle): the core pool
    // hands out its connections, whose socket is `stream`.
    this.pool.pool.on('connection', (connection) => (connection as unknown as { stream?: Socket }).stream?.unref());
  }

  /** MySQL commits DDL as it goes, so statements run in order on one connection without a transaction. */
  async run(statements: string[]): Promise<void> {
    await this.onConnection(async (connection) => {
      for (const statement of statements) await connection.query(bounded(statement));
    });
  }

  override async verify(): Promise<void> {
    await this.query('SELECT 1');
  }

  /**
   * Uses one pooled connection. After a failure it is closed rather than given back: mysql2's pool
   * would go on counting a connection whose statement timed out as in use, and once every one had,
   * wait for a free one for ever.
   */
  private async onConnection<T>(use: (connection: PoolConnection) => Promise<T>): Promise<T> {
    const connection = await this.pool.getConnection();
    let result: T;
    try {
      result = await use(connection);
    } catch (err) {
      connection.destroy();
      throw err;
    }
    connection.release();
    return result;
  }

  private query(sql: string, values?: unknown[]): Promise<unknown> {
    return this.onConnection(async (connection) => (await connection.query(bounded(sql, values)))[0]);
  }

  /** Every host the user is defined for: the defaults act on all of them. */
  private async hostsOf(username: string): Promise<string[]> {
    const rows = (await this.query('SELECT Host AS host FROM mysql.user WHERE User = ?', [username])) as Array<{ host: string }>;
    return rows.map((row) => row.host);
  }

  protected async dropUser(username: string): Promise<void> {
    for (const host of await this.hostsOf(username)) await this.query('DROP USER IF EXISTS ?@?', [username, host]);
  }

  /** DDL is not transactional here, so a half-done creation is undone by dropping the user. */
  protected undoFailedCreation(username: string): Promise<void> {
    return this.dropUser(username);
  }

  async updateUser(request: UpdateUserRequest): Promise<void> {
    const { credential, expiration } = request;
    if (credential) {
      if (credential.statements.length > 0) {
        await this.run(renderStatements(credential.statements, { name: request.username, credential: credential.value }));
      } else {
        for (const host of await this.hostsOf(request.username)) {
          await this.query('ALTER USER ?@? IDENTIFIED BY ?', [request.username, host, credential.value.password ?? '']);
        }
      }
    }
    // MySQL users have no expiry of their own: renewal runs only statements the role gives.
    if (expiration) await this.run(renderStatements(expiration.statements, { name: request.username, expiration: sqlTimestamp(expiration.value) }));
  }
}

export const mysqlPlugin: PluginDefinition = sqlPluginDefinition({
  name: 'mysql-database-plugin',
  maxUsernameLength: 32,
  // The driver is loaded when a connection is first configured.
  open: async (settings) => new MysqlPlugin(settings, (await import('mysql2/promise')).createPool),
});
