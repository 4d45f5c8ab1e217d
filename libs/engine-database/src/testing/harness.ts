/** Test support: a database mount over real storage, driven through the Backend as the engine host would. */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { Capability, MountInfo, Operation, Request } from '@svc/framework';
import { toErrorBody } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';
import { engineContext, engineRequest, mountStorage, testMount, type EngineContextOptions } from '@svc/testing';
import Redis from 'ioredis';
import pino from 'pino';
import { DatabaseBackend } from '../database-backend';

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
  return testMount('database', { config });
}

export class DatabaseHarness {
  readonly backend: DatabaseBackend;
  /** JSON log lines the backend wrote. */
  readonly logs: Array<Record<string, unknown>> = [];

  constructor(
    readonly mount: MountInfo = databaseMount(),
    readonly storage: StorageView = mountStorage(mount),
    context: Omit<EngineContextOptions, 'logger' | 'storage'> = {},
  ) {
    const sink = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        this.logs.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    this.backend = new DatabaseBackend(mount, engineContext({ ...context, storage, logger: pino(sink) }));
  }

  request(operation: Exclude<Operation, 'help'>, path: string, data: Record<string, unknown> = {}, capabilities: Capability[] = ['root']): Request {
    return {
      ...engineRequest(this.mount, operation, path, data, capabilities),
      caller: { tokenAccessor: 'accessor', policies: ['root'], entityId: '', displayName: 'token', namespace: '', meta: {} },
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
    return this.backend.periodic();
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
