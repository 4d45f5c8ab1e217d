import type * as IORedis from 'ioredis';
import type { FieldMap } from '@svc/framework';
import { DATABASE_TIMEOUT_MS, InvalidSettingsError, type ConnectionSettings, type DatabasePlugin, type DeleteUserRequest, type NewUserRequest, type PluginDefinition, type UpdateUserRequest } from './plugin';

const REDIS_FIELDS: FieldMap = {
  host: { type: 'string', description: 'Redis host (redis-database-plugin).' },
  port: { type: 'int', default: 6379, description: 'Redis port (redis-database-plugin).' },
  tls: { type: 'bool', default: false, description: 'Connect to Redis over TLS (redis-database-plugin).' },
  insecure_tls: { type: 'bool', default: false, description: "Skip verifying Redis's TLS certificate (redis-database-plugin)." },
  ca_cert: { type: 'string', default: '', description: 'PEM CA certificate that signed the Redis TLS certificate (redis-database-plugin).' },
};

/**
 * ACL rules of the role's statements: each statement is a JSON array of rules, as Vault's Redis
 * plugin takes them (`["~*", "+@read"]`), or rules separated by spaces.
 */
export function aclRules(statements: string[]): string[] {
  return statements.flatMap((statement) => {
    const text = statement.trim();
    if (!text.startsWith('[')) return text.split(/\s+/).filter((rule) => rule !== '');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new InvalidSettingsError('creation_statements', 'a Redis statement starting with "[" must be a JSON array of ACL rules');
    }
    if (!Array.isArray(parsed) || !parsed.every((rule) => typeof rule === 'string')) {
      throw new InvalidSettingsError('creation_statements', 'a Redis statement must be a JSON array of ACL rule strings');
    }
    return parsed;
  });
}

class RedisPlugin implements DatabasePlugin {
  private connection?: Promise<IORedis.Redis>;

  constructor(
    private readonly settings: ConnectionSettings,
    private readonly driver: typeof IORedis,
  ) {
    if (typeof settings.details.host !== 'string' || settings.details.host === '') {
      throw new InvalidSettingsError('host', 'host is required for redis-database-plugin');
    }
  }

  /** One connection per plugin; forgotten when it ends (server restart, refusal) so the next call reconnects. */
  private client(): Promise<IORedis.Redis> {
    if (!this.connection) {
      const attempt = this.open();
      const forget = () => {
        if (this.connection === attempt) this.connection = undefined;
      };
      attempt.then((redis) => redis.once('end', forget), forget);
      this.connection = attempt;
    }
    return this.connection;
  }

  private async open(): Promise<IORedis.Redis> {
    const { details, username, password } = this.settings;
    const redis = new this.driver.Redis({
      host: String(details.host),
      port: Number(details.port ?? 6379),
      username: username || undefined,
      password: password || undefined,
      tls: details.tls ? { ca: details.ca_cert ? String(details.ca_cert) : undefined, rejectUnauthorized: !details.insecure_tls } : undefined,
      lazyConnect: true,
      connectTimeout: DATABASE_TIMEOUT_MS,
      // The connect timeout ends once the socket is open; a server that then never answers is this one's.
      commandTimeout: DATABASE_TIMEOUT_MS,
      maxRetriesPerRequest: 1,
      // The root user may lack INFO, which the ready check runs.
      enableReadyCheck: false,
      // CLIENT SETINFO on connecting would hold connect() for a whole deadline on a silent server
      // before the call's own command had its deadline.
      disableClientInfo: true,
      // Fail the request now rather than queueing it while reconnecting for ever.
      retryStrategy: () => null,
    });
    // The socket's own error (ECONNREFUSED, WRONGPASS) says more than "Connection is closed".
    let cause: unknown;
    redis.on('error', (err) => (cause = err));
    try {
      await redis.connect();
    } catch (err) {
      redis.disconnect();
      throw cause ?? err;
    }
    // The open connection must not keep a stopping process alive.
    redis.stream.unref();
    return redis;
  }

  /**
   * Runs one command. A failure other than Redis's own answer (a deadline, a closed socket) leaves
   * the connection in doubt, its reply possibly still to come: it is dropped, so the next call
   * starts on a new one rather than waiting behind it.
   */
  private async command<T>(run: (redis: IORedis.Redis) => Promise<T>): Promise<T> {
    const connection = this.client();
    const redis = await connection;
    try {
      return await run(redis);
    } catch (err) {
      if (!(err instanceof this.driver.ReplyError)) {
        if (this.connection === connection) this.connection = undefined;
        redis.disconnect();
      }
      throw err;
    }
  }

  private acl(...args: string[]): Promise<unknown> {
    return this.command((redis) => redis.call('ACL', ...args));
  }

  async newUser(request: NewUserRequest): Promise<void> {
    const rules = aclRules(request.statements);
    try {
      await this.acl('SETUSER', request.username, 'on', `>${request.credential.password ?? ''}`, ...rules);
    } catch (err) {
      await this.acl('DELUSER', request.username).catch(() => undefined);
      throw err;
    }
  }

  async updateUser(request: UpdateUserRequest): Promise<void> {
    // Redis users do not expire; only a new password changes anything.
    if (request.credential) await this.acl('SETUSER', request.username, 'resetpass', `>${request.credential.value.password ?? ''}`);
  }

  async deleteUser(request: DeleteUserRequest): Promise<void> {
    await this.acl('DELUSER', request.username);
  }

  async verify(): Promise<void> {
    await this.command((redis) => redis.ping());
  }

  async close(): Promise<void> {
    const current = this.connection;
    this.connection = undefined;
    const redis = await current?.catch(() => undefined);
    await redis?.quit().catch(() => redis.disconnect());
  }
}

export const redisPlugin: PluginDefinition = {
  name: 'redis-database-plugin',
  version: 'v1.0.0+builtin.svc',
  fields: REDIS_FIELDS,
  requiredFields: ['host'],
  credentialTypes: ['password'],
  defaultUsernameTemplate: 'V_{{.DisplayName | uppercase | truncate 10}}_{{.RoleName | uppercase | truncate 10}}_{{random 20 | uppercase}}_{{unix_time}}',
  maxUsernameLength: 100,
  // The driver is loaded when a connection is first configured.
  open: async (settings) => new RedisPlugin(settings, await import('ioredis')),
};
