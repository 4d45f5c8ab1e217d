import { escapeIdentifier, Pool } from 'pg';
import { InvalidSettingsError, type ConnectionSettings, type DatabasePlugin, type DeleteUserRequest, type NewUserRequest, type PluginDefinition, type UpdateUserRequest } from './plugin';
import { renderConnectionUrl, renderStatements, rollBack, sqlTimestamp, SQL_CONNECTION_FIELDS, type StatementRunner } from './sql-statements';

const DEFAULT_PASSWORD_STATEMENTS = [`ALTER ROLE "{{name}}" WITH PASSWORD '{{password}}'`];
const DEFAULT_RENEW_STATEMENTS = [`ALTER ROLE "{{name}}" VALID UNTIL '{{expiration}}'`];

class PostgresPlugin implements DatabasePlugin, StatementRunner {
  private readonly pool: Pool;
  private closed = false;

  constructor(settings: ConnectionSettings) {
    const template = String(settings.details.connection_url ?? '');
    if (!/^postgres(ql)?:\/\//.test(template)) {
      throw new InvalidSettingsError('connection_url', 'connection_url must be a postgresql:// URL');
    }
    this.pool = new Pool({
      connectionString: renderConnectionUrl(template, settings.username, settings.password, settings.disableEscaping),
      max: Number(settings.details.max_open_connections ?? 4),
      connectionTimeoutMillis: 10_000,
      // Idle connections must not keep a stopping process alive.
      allowExitOnIdle: true,
    });
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

  async newUser(request: NewUserRequest): Promise<void> {
    const values = { name: request.username, credential: request.credential, expiration: sqlTimestamp(request.expiration) };
    try {
      await this.run(renderStatements(request.statements, values));
    } catch (err) {
      // The creation ran in one transaction, so without rollback statements nothing is left behind.
      await rollBack(request.rollbackStatements, values, this, async () => undefined);
      throw err;
    }
  }

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

  async deleteUser(request: DeleteUserRequest): Promise<void> {
    if (request.statements.length > 0) return this.run(renderStatements(request.statements, { name: request.username }));
    const exists = await this.pool.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [request.username]);
    if (exists.rowCount === 0) return;
    const role = escapeIdentifier(request.username);
    // Objects the user owns in this database go to the connection's user, so DROP ROLE can succeed.
    await this.run([`REASSIGN OWNED BY ${role} TO CURRENT_USER`, `DROP OWNED BY ${role}`, `DROP ROLE ${role}`]);
  }

  async verify(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}

export const postgresqlPlugin: PluginDefinition = {
  name: 'postgresql-database-plugin',
  version: 'v1.0.0+builtin.svc',
  fields: SQL_CONNECTION_FIELDS,
  requiredFields: ['connection_url'],
  credentialTypes: ['password', 'rsa_private_key', 'client_certificate'],
  defaultUsernameTemplate: 'v-{{.DisplayName | truncate 8}}-{{.RoleName | truncate 8}}-{{random 20}}-{{unix_time}}',
  maxUsernameLength: 63,
  open: (settings) => new PostgresPlugin(settings),
};
