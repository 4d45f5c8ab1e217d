import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { createLockManager, Lock, LockManager, MemoryLockManager, MemoryLockTable, RedisLockManager } from './index';

const REDIS_ADDRESS = '127.0.0.1:6379';
const redisKeyPrefix = `test:locks:${randomUUID()}:`;
const memoryTable = new MemoryLockTable();

const backends: { name: string; connect: () => LockManager }[] = [
  { name: 'memory', connect: () => new MemoryLockManager(memoryTable) },
  { name: 'redis', connect: () => new RedisLockManager({ address: REDIS_ADDRESS, keyPrefix: redisKeyPrefix }) },
];

afterAll(async () => {
  const redis = new Redis(REDIS_ADDRESS);
  try {
    const keys = await redis.keys(`${redisKeyPrefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    await redis.quit();
  }
});

/** Retries `attempt` until it yields a value, failing after `deadlineMs`. */
async function eventually<T>(attempt: () => Promise<T | null>, deadlineMs = 5000): Promise<T> {
  const giveUpAt = Date.now() + deadlineMs;
  while (Date.now() < giveUpAt) {
    const value = await attempt();
    if (value !== null) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no result within ${deadlineMs} ms`);
}

describe.each(backends)('$name lock manager', ({ name, connect }) => {
  // Two managers = two replicas (for Redis, two connections) contending for the same locks.
  let first: LockManager;
  let second: LockManager;
  let lockName: string;

  beforeEach(() => {
    first = connect();
    second = connect();
    lockName = `job-${randomUUID()}`;
  });

  afterEach(async () => {
    await Promise.all([first.close(), second.close()]);
  });

  it('reports its backend', () => {
    expect(first.kind).toBe(name);
  });

  it('gives a lock to one holder at a time', async () => {
    const lock = await first.tryAcquire(lockName, 10_000);

    expect(lock).toMatchObject({ name: lockName });
    await expect(second.tryAcquire(lockName, 10_000)).resolves.toBeNull();
    await expect(first.tryAcquire(lockName, 10_000)).resolves.toBeNull();
  });

  it('lets another holder in after release', async () => {
    const lock = (await first.tryAcquire(lockName, 10_000))!;
    await lock.release();

    await expect(second.tryAcquire(lockName, 10_000)).resolves.not.toBeNull();
  });

  it('hands out strictly increasing fencing tokens across holders', async () => {
    const tokens: number[] = [];
    for (const manager of [first, second, first, second, second]) {
      const lock = (await manager.tryAcquire(lockName, 10_000))!;
      tokens.push(lock.fencingToken);
      await lock.release();
    }

    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
  });

  it('expires after the TTL; the old holder can then neither renew nor release the new lock', async () => {
    const stale = (await first.tryAcquire(lockName, 100))!;

    const current = await eventually(() => second.tryAcquire(lockName, 10_000));

    expect(current.fencingToken).toBeGreaterThan(stale.fencingToken);
    await expect(stale.renew()).resolves.toBe(false);
    await stale.release();
    await expect(first.tryAcquire(lockName, 10_000)).resolves.toBeNull();
    await expect(current.renew()).resolves.toBe(true);
  });

  it('runs withLock callbacks under the lock and returns their result', async () => {
    const result = await first.withLock(lockName, 10_000, async (lock) => {
      const elsewhere = await second.withLock(lockName, 10_000, async () => 'must not run');
      return { token: lock.fencingToken, elsewhere };
    });

    expect(result).toEqual({ token: expect.any(Number), elsewhere: null });
    await expect(second.tryAcquire(lockName, 10_000)).resolves.not.toBeNull();
  });

  it('keeps a withLock lock alive past its TTL while the callback runs', async () => {
    const ttlMs = 150;
    const held = await first.withLock(lockName, ttlMs, async () => {
      const until = Date.now() + ttlMs * 4;
      let rivalGotIn = false;
      while (Date.now() < until && !rivalGotIn) {
        rivalGotIn = (await second.tryAcquire(lockName, ttlMs)) !== null;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return !rivalGotIn;
    });

    expect(held).toBe(true);
  });

  it('releases the lock when the withLock callback throws', async () => {
    await expect(
      first.withLock(lockName, 10_000, async () => {
        throw new Error('rotation failed');
      }),
    ).rejects.toThrow('rotation failed');

    await expect(second.tryAcquire(lockName, 10_000)).resolves.not.toBeNull();
  });

  it('never lets two racing managers hold the lock at once', async () => {
    for (let round = 0; round < 50; round++) {
      const winners = (
        await Promise.all([first.tryAcquire(lockName, 10_000), second.tryAcquire(lockName, 10_000)])
      ).filter((lock): lock is Lock => lock !== null);

      expect(winners).toHaveLength(1);
      await winners[0].release();
    }
  });

  it('rejects bad arguments and use after close', async () => {
    await expect(first.tryAcquire('', 1000)).rejects.toThrow('lock name must be a non-empty string');
    await expect(first.tryAcquire(lockName, 0)).rejects.toThrow('lock TTL must be a positive whole number');
    await first.close();
    await expect(first.tryAcquire(lockName, 1000)).rejects.toThrow('lock manager is closed');
  });
});

describe('createLockManager', () => {
  it('gives in-memory locks without config and Redis locks with it', async () => {
    const memory = createLockManager();
    const redis = createLockManager({ address: REDIS_ADDRESS, keyPrefix: redisKeyPrefix });
    try {
      expect(memory).toBeInstanceOf(MemoryLockManager);
      expect(redis).toBeInstanceOf(RedisLockManager);
    } finally {
      await Promise.all([memory.close(), redis.close()]);
    }
  });

  it('names a malformed Redis address', () => {
    expect(() => createLockManager({ address: 'localhost' })).toThrow('address "localhost" must be host:port');
    expect(() => createLockManager({ address: 'localhost:70000' })).toThrow('must be host:port');
  });
});
