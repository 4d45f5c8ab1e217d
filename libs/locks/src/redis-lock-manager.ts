import type Redis from 'ioredis';
import { LockManagerBase } from './lock-manager-base';
import { defineLockScripts, LockScripts } from './redis-scripts';
import { RedisLockConfig } from './types';

export const DEFAULT_LOCK_KEY_PREFIX = 'svc:lock:';

/** Locks shared by every replica through one Redis. */
export class RedisLockManager extends LockManagerBase {
  readonly kind = 'redis';
  /** ioredis is loaded by the servers configured with Redis locks only. */
  private readonly connection: Promise<{ redis: Redis; scripts: LockScripts }>;
  private readonly keyPrefix: string;

  constructor(config: RedisLockConfig) {
    super();
    const { host, port } = parseAddress(config.address);
    this.keyPrefix = config.keyPrefix ?? DEFAULT_LOCK_KEY_PREFIX;
    this.connection = import('ioredis').then(({ default: Client }) => {
      const redis = new Client({
        host,
        port,
        password: config.password,
        db: config.db,
        tls: config.tls ? {} : undefined,
        // A scheduler tick should learn quickly that Redis is down rather than queue for long.
        maxRetriesPerRequest: 1,
      });
      // Failures reach callers through their commands; without a listener ioredis would also print
      // every reconnection error.
      redis.on('error', () => undefined);
      return { redis, scripts: defineLockScripts(redis) };
    });
  }

  protected async takeOwnership(name: string, owner: string, ttlMs: number): Promise<number | null> {
    const { lockKey, fenceKey } = this.keys(name);
    return (await this.connection).scripts.lockAcquire(lockKey, fenceKey, owner, ttlMs);
  }

  protected async extendOwnership(name: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await (await this.connection).scripts.lockRenew(this.keys(name).lockKey, owner, ttlMs)) === 1;
  }

  protected async dropOwnership(name: string, owner: string): Promise<void> {
    await (await this.connection).scripts.lockRelease(this.keys(name).lockKey, owner);
  }

  protected async disconnect(): Promise<void> {
    await (await this.connection).redis.quit();
  }

  /** The braces make both keys one Redis Cluster hash slot, as a script touching both requires;
   * lock keys end in `}` and fence keys in `:fence`, so no lock name can collide with another's. */
  private keys(name: string): { lockKey: string; fenceKey: string } {
    const lockKey = `${this.keyPrefix}{${name}}`;
    return { lockKey, fenceKey: `${lockKey}:fence` };
  }
}

function parseAddress(address: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:\s[\]]+)):(\d{1,5})$/.exec(address ?? '');
  const port = Number(match?.[3]);
  if (!match || port < 1 || port > 65535) {
    throw new Error(`Redis lock config: address "${address}" must be host:port`);
  }
  return { host: match[1] ?? match[2], port };
}
