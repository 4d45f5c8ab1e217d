import type Redis from 'ioredis';

/** Each script is one atomic step: no other client can act between its commands. */
const SCRIPTS = {
  // Take the lock and its fencing token together, so a token always belongs to exactly one holder.
  lockAcquire: {
    numberOfKeys: 2,
    lua: `
      if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
        return redis.call('INCR', KEYS[2])
      end
      return false`,
  },
  lockRenew: {
    numberOfKeys: 1,
    lua: `
      if redis.call('GET', KEYS[1]) == ARGV[1] then
        return redis.call('PEXPIRE', KEYS[1], ARGV[2])
      end
      return 0`,
  },
  lockRelease: {
    numberOfKeys: 1,
    lua: `
      if redis.call('GET', KEYS[1]) == ARGV[1] then
        return redis.call('DEL', KEYS[1])
      end
      return 0`,
  },
};

/** The commands `defineCommand` adds to the client (sent as EVALSHA, falling back to EVAL). */
export interface LockScripts {
  lockAcquire(lockKey: string, fenceKey: string, owner: string, ttlMs: number): Promise<number | null>;
  lockRenew(lockKey: string, owner: string, ttlMs: number): Promise<number>;
  lockRelease(lockKey: string, owner: string): Promise<number>;
}

export function defineLockScripts(redis: Redis): LockScripts {
  for (const [name, definition] of Object.entries(SCRIPTS)) redis.defineCommand(name, definition);
  return redis as unknown as LockScripts;
}
