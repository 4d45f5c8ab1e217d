import { escapeIdentifier, Pool } from 'pg';
import { InvalidSettingsError, type ConnectionSettings, type PluginDefinition, type UpdateUserRequest } from './plugin';
import { SqlPlugin, sqlPluginDefinition } from './sql-plugin';
import { renderConnectionUrl, renderStatements, sqlTimestamp } from './sql-statements';

const DEFAULT_PASSWORD_STATEMENTS = [`ALTER ROLE "{{name}}" WITH PASSWORD '{{password}}'`];
const DEFAULT_RENEW_STATEMENTS = [`ALTER ROLE "{{name}}" VALID UNTIL '{{expiration}}'`];

class PostgresPlugin extends SqlPlugin<Pool> {
  constructor(settings: ConnectionSettings) {
    const template = String(settings.details.connection_url ?? '');
    if (!/^postgres(ql)?:\/\//.test(template)) {
      throw new InvalidSettingsError('connection_url', 'connection_url must be a postgresql:// URL');
    }
    super(new Pool({
      connectionString: renderConnectionUrl(template, settings.username, settings.password, settings.disableEscaping),
      max: Number(settings.details.max_open_connections ?? 4),
      connectionTimeoutMillis: 10_000,
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

  protected async dropUser(username: string): Promise<void> {
    const exists = await this.pool.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [username]);
    if (exists.rowCount === 0) return;
    const role = escapeIdentifier(username);
    // Objects the user owns in this database go to the connection's user, so DROP ROLE can succeed.
    await this.run([`REASSIGN OWNED BY ${role} TO CURRENT_USER`, `DROP OWNED BY ${role}`, `DROP ROLE ${role}`]);
  }
}

export const postgresqlPlugin: PluginDefinition = sqlPluginDefinition({
  name: 'postgresql-database-plugin',
  maxUsernameLength: 63,
  open: (settings) => new PostgresPlugin(settings),
});
