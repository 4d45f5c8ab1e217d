/** Test support: a database mount over real storage, driven through the Backend as the engine host would. */
import { pbkdf2Sync, createHash, createHmac, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { Capability, MountInfo, Operation, Request } from '@svc/framework';
import { toErrorBody } from '@svc/http';
import { MemoryLockManager, type LockManager } from '@svc/locks';
import { Barrier, createView, InmemPhysical, Keyring, type StorageView } from '@svc/storage';
import Redis from 'ioredis';
import { createConnection } from 'mysql2/promise';
import { Client } from 'pg';
import pino from 'pino';
import { DatabaseBackend } from './database-backend';
import type { DatabaseEngineOptions } from './engine';

export const POSTGRES_URL = 'postgresql://{{username}}:{{password}}@127.0.0.1:5432/test';
export const MYSQL_URL = '{{username}}:{{password}}@tcp(127.0.0.1:3306)/';

export interface Outcome {
  status: number;
  data?: Record<string, unknown> | null;
  warnings?: string[];
  errors?: string[];
  secret?: { type: string; internalData: Record<string, unknown>; ttl: number; maxTtl?: number; renewable: boolean };
}

/** A short unique suffix for names that must not collide with parallel test runs. */
export function unique(prefix: string): string {
  return `${prefix}_${randomUUID().replace(/-/g, '').slice(0, 10)}`;
}

export function databaseMount(config: Partial<MountInfo['config']> = {}): MountInfo {
  const uuid = randomUUID();
  return {
    path: 'database/',
    type: 'database',
    uuid,
    accessor: `database_${uuid.slice(0, 8)}`,
    namespace: '',
    description: '',
    config: { default_lease_ttl: 0, max_lease_ttl: 0, ...config },
    options: {},
    local: false,
    seal_wrap: false,
  };
}

/** A mount's storage over in-memory physical storage behind an unsealed barrier. */
export function mountStorage(mount: MountInfo): StorageView {
  const barrier = new Barrier(new InmemPhysical());
  barrier.unseal(Keyring.generate());
  return createView(barrier, `logical/${mount.uuid}/`);
}

export class DatabaseHarness {
  readonly backend: DatabaseBackend;
  /** JSON log lines the backend wrote. */
  readonly logs: Array<Record<string, unknown>> = [];

  constructor(
    readonly mount: MountInfo = databaseMount(),
    readonly storage: StorageView = mountStorage(mount),
    locks: LockManager = new MemoryLockManager(),
    options: DatabaseEngineOptions = {},
  ) {
    const sink = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        this.logs.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    this.backend = new DatabaseBackend(mount, { locks, logger: pino(sink), passwordPolicy: async () => undefined }, options);
  }

  request(operation: Exclude<Operation, 'help'>, path: string, data: Record<string, unknown> = {}, capabilities: Capability[] = ['root']): Request {
    return {
      requestId: randomUUID(),
      operation,
      path,
      data,
      headers: {},
      mount: this.mount,
      storage: this.storage,
      caller: { tokenAccessor: 'accessor', policies: ['root'], entityId: '', displayName: 'token', namespace: '', meta: {} },
      capabilities: new Set(capabilities),
    };
  }

  /** One request; errors come back as the status and messages a client would see. */
  async call(operation: Exclude<Operation, 'help'>, path: string, data: Record<string, unknown> = {}, capabilities?: Capability[]): Promise<Outcome> {
    return outcome(() => this.backend.handle(this.request(operation, path, data, capabilities)));
  }

  renew(internalData: Record<string, unknown>, data: Record<string, unknown> = {}): Promise<Outcome> {
    return outcome(() => this.backend.renewSecret(this.request('update', 'creds', data), 'creds', internalData));
  }

  revoke(internalData: Record<string, unknown>): Promise<Outcome> {
    return outcome(async () => {
      await this.backend.revokeSecret(this.request('update', 'creds'), 'creds', internalData);
      return undefined;
    });
  }

  periodic(): Promise<void> {
    return this.backend.periodic(this.request('update', ''));
  }

  rotationsLogged(role: string): number {
    return this.logs.filter((line) => line.msg === 'rotated static role credentials' && line.role === role).length;
  }
}

async function outcome(call: () => Promise<{ data?: Record<string, unknown> | null; warnings?: string[]; secret?: Outcome['secret'] } | undefined>): Promise<Outcome> {
  try {
    const response = await call();
    return { status: response?.data ? 200 : 204, data: response?.data, warnings: response?.warnings, secret: response?.secret };
  } catch (err) {
    return toErrorBody(err);
  }
}

/** Polls `check` until it holds or the deadline passes; returns whether it held. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

// --- PostgreSQL: this machine trusts every TCP login (pg_hba.conf "trust"), so whether a password
// would be accepted is checked against the server's SCRAM verifier, as password authentication would.

export async function withPostgres<T>(fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: 'postgresql://postgres@127.0.0.1:5432/test' });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export interface PostgresRole {
  canLogin: boolean;
  validUntil: Date | null;
  verifier: string | null;
  comment: string | null;
}

export function postgresRole(name: string): Promise<PostgresRole | null> {
  return withPostgres(async (client) => {
    const result = await client.query<{ rolcanlogin: boolean; rolvaliduntil: Date | null; rolpassword: string | null; comment: string | null }>(
      `SELECT rolcanlogin, rolvaliduntil, rolpassword, shobj_description(oid, 'pg_authid') AS comment FROM pg_authid WHERE rolname = $1`,
      [name],
    );
    const row = result.rows[0];
    return row ? { canLogin: row.rolcanlogin, validUntil: row.rolvaliduntil, verifier: row.rolpassword, comment: row.comment } : null;
  });
}

/** Whether SCRAM-SHA-256 authentication would accept `password` for a stored verifier. */
export function scramAccepts(verifier: string | null, password: string): boolean {
  const match = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(verifier ?? '');
  if (!match) return false;
  const [, iterations, salt, storedKey] = match;
  const salted = pbkdf2Sync(password, Buffer.from(salt, 'base64'), Number(iterations), 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  return createHash('sha256').update(clientKey).digest('base64') === storedKey;
}

/** A login with this password would succeed: the role exists, may log in, has not expired, and the password matches. */
export async function postgresLoginWorks(name: string, password: string): Promise<boolean> {
  const role = await postgresRole(name);
  if (!role?.canLogin) return false;
  if (role.validUntil && role.validUntil.getTime() <= Date.now()) return false;
  return scramAccepts(role.verifier, password);
}

// --- MariaDB enforces passwords: logins are real.

export async function mysqlLoginWorks(user: string, password: string): Promise<boolean> {
  try {
    const connection = await createConnection({ host: '127.0.0.1', port: 3306, user, password, connectTimeout: 5000 });
    await connection.query('SELECT 1');
    await connection.end();
    return true;
  } catch {
    return false;
  }
}

export async function withMysql<T>(fn: (query: (sql: string, values?: unknown[]) => Promise<unknown>) => Promise<T>): Promise<T> {
  const connection = await createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
  try {
    return await fn(async (sql, values) => (await connection.query(sql, values))[0]);
  } finally {
    await connection.end();
  }
}

export async function mysqlUserExists(user: string): Promise<boolean> {
  return withMysql(async (query) => ((await query('SELECT 1 FROM mysql.user WHERE User = ?', [user])) as unknown[]).length > 0);
}

// --- Redis ACL users log in with AUTH.

export async function redisLoginWorks(username: string, password: string): Promise<boolean> {
  return withRedis(async (redis) => {
    try {
      return (await redis.call('AUTH', username, password)) === 'OK';
    } catch {
      return false;
    }
  });
}

export async function withRedis<T>(fn: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
  await redis.connect();
  try {
    return await fn(redis);
  } finally {
    await redis.quit();
  }
}
