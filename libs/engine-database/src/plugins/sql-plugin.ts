/** What the SQL plugins do alike around their own statements: creation with rollback, deletion, verify, close. */
import type { DatabasePlugin, DeleteUserRequest, NewUserRequest, PluginDefinition, UpdateUserRequest } from './plugin';
import { renderStatements, rollBack, sqlTimestamp, SQL_CONNECTION_FIELDS, type StatementRunner } from './sql-statements';

/** The part of a driver's connection pool the shared steps use. */
interface SqlPool {
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
}

export abstract class SqlPlugin<Pool extends SqlPool> implements DatabasePlugin, StatementRunner {
  private closed = false;

  protected constructor(protected readonly pool: Pool) {}

  abstract run(statements: string[]): Promise<void>;

  abstract updateUser(request: UpdateUserRequest): Promise<void>;

  /** Removes the user when the role gives no revocation statements; a user already gone is not an error. */
  protected abstract dropUser(username: string): Promise<void>;

  /** Cleans up after a failed creation when the role gives no rollback statements. */
  protected abstract undoFailedCreation(username: string): Promise<void>;

  async newUser(request: NewUserRequest): Promise<void> {
    const values = { name: request.username, credential: request.credential, expiration: sqlTimestamp(request.expiration) };
    try {
      await this.run(renderStatements(request.statements, values));
    } catch (err) {
      await rollBack(request.rollbackStatements, values, this, () => this.undoFailedCreation(request.username));
      throw err;
    }
  }

  async deleteUser(request: DeleteUserRequest): Promise<void> {
    if (request.statements.length > 0) return this.run(renderStatements(request.statements, { name: request.username }));
    await this.dropUser(request.username);
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

/** The definition of a SQL plugin: what differs between them is the name, the username limit and the plugin. */
export function sqlPluginDefinition(definition: Pick<PluginDefinition, 'name' | 'maxUsernameLength' | 'open'>): PluginDefinition {
  return {
    version: 'v1.0.0+builtin.svc',
    fields: SQL_CONNECTION_FIELDS,
    requiredFields: ['connection_url'],
    credentialTypes: ['password', 'rsa_private_key', 'client_certificate'],
    defaultUsernameTemplate: 'v-{{.DisplayName | truncate 8}}-{{.RoleName | truncate 8}}-{{random 20}}-{{unix_time}}',
    ...definition,
  };
}
