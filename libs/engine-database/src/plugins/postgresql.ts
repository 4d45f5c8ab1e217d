import type * as Pg from 'pg';
import { DATABASE_TIMEOUT_MS, InvalidSettingsError, type ConnectionSettings, type PluginDefinition, type UpdateUserRequest } from './plugin';
import { SqlPlugin, sqlPluginDefinition } from './sql-plugin';
import { renderConnectionUrl, renderStatements, sqlTimestamp } from './sql-statements';

const DEFAULT_PASSWORD_STATEMENTS = [`ALTER ROLE "{{name}}" WITH PASSWORD '{{password}}'`];
const DEFAULT_RENEW_STATEMENTS = [`ALTER ROLE "{{name}}" VALID UNTIL '{{expiration}}'`];

class PostgresPlugin extends SqlPlugin<Pg.Pool> {
  constructor(
    settings: ConnectionSettings,
    private readonly pg: typeof Pg,
  ) {
    const template = String(settings.details.connection_url ?? '');
    if (!/^postgres(ql)?:\/\//.test(template)) {
      throw new InvalidSettingsError('connection_url', 'connection_url must be a postgresql:// URL');
    }
    super(new pg.Pool({
      connectionString: renderConnectionUrl(template, settings.username, settings.password, settings.disableEscaping),
      max: Number(settings.details.max_open_connections ?? 4),
      connectionTimeoutMillis: DATABASE_TIMEOUT_MS,
      // Client-side, so it holds when the server (or a proxy in front of it) stops answering.
      query_timeout: DATABASE_TIMEOUT_MS,
      // Idle connections must not keep a stopping process alive.
      allowExitOnIdle: true,
    }));
    // An idle connection dropped by the server (restart) must not crash the process; the next
    // query opens a new one and reports any failure to its caller.
    this.pool.on('error', () => undefined);
  }

  async run(statements: string[]): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      for (const statement of statements) await client.query(statement);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /** The creation ran in one transaction, so without rollback statements nothing is left behind. */
  protected async undoFailedCreation(): Promise<void> {}

  async updateUser(request: UpdateUserRequest): Promise<void> {
    const statements: string[] = [];
    if (request.credential) {
      const given = request.credential.statements;
      statements.push(...renderStatements(given.length > 0 ? given : DEFAULT_PASSWORD_STATEMENTS, { name: request.username, credential: request.credential.value }));
    }
    if (request.expiration) {
      const given = request.expiration.statements;
      statements.push(...renderStatements(given.length > 0 ? given : DEFAULT_RENEW_STATEMENTS, { name: request.username, expiration: sqlTimestamp(request.expiration.value) }));
    }
    await this.run(statements);
  }

  /**
   * Vault's default revocation: revoke what the user was granted, then drop the role. Nothing is
   * reassigned: REASSIGN OWNED and DROP OWNED need the privileges of the user's role, which a
   * connection user with CREATEROLE but without superuser lacks (PostgreSQL 15 and later).
   */
  protected async dropUser(username: string): Promise<void> {
    const exists = await this.pool.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [username]);
    if (exists.rowCount === 0) return;
    const { escapeIdentifier } = this.pg;
    const role = escapeIdentifier(username);
    const granted = await this.pool.query<{ schema: string; table: string }>(
      'SELECT DISTINCT table_schema AS schema, table_name AS table FROM information_schema.role_table_grants WHERE grantee = $1',
      [username],
    );
    // Table by table first: a statement over a whole schema fails outright when the connection
    // user holds no privilege on one of its tables.
    const revocations = granted.rows.map(({ schema, table }) => `REVOKE ALL PRIVILEGES ON TABLE ${escapeIdentifier(schema)}.${escapeIdentifier(table)} FROM ${role}`);
    for (const name of new Set(['public', ...granted.rows.map((row) => row.schema)])) {
      const schema = escapeIdentifier(name);
      revocations.push(
        `REVOKE ALL PRIVILEGES ON ALL TABLES IN SCHEMA ${schema} FROM ${role}`,
        `REVOKE ALL PRIVILEGES ON ALL SEQUENCES IN SCHEMA ${schema} FROM ${role}`,
        `REVOKE ALL PRIVILEGES ON ALL FUNCTIONS IN SCHEMA ${schema} FROM ${role}`,
        `REVOKE USAGE ON SCHEMA ${schema} FROM ${role}`,
      );
    }
    const database = await this.pool.query<{ name: string }>('SELECT current_database() AS name');
    revocations.push(`REVOKE CONNECT ON DATABASE ${escapeIdentifier(database.rows[0].name)} FROM ${role}`);
    // One by one, failures ignored (the connection user may not hold a grant option on everything):
    // every privilege removed counts, and DROP ROLE reports whatever still holds the role.
    for (const statement of revocations) await this.pool.query(statement).catch(() => undefined);
    await this.pool.query(`DROP ROLE IF EXISTS ${role}`);
  }
}

export const postgresqlPlugin: PluginDefinition = sqlPluginDefinition({
  name: 'postgresql-database-plugin',
  maxUsernameLength: 63,
  // The driver is loaded when a connection is first configured.
  open: async (settings) => new PostgresPlugin(settings, await import('pg')),
});
