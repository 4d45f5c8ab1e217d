/**
 * Distributed locks for jobs that must run on exactly one replica (lease expiry, rotations,
 * snapshots). Each acquisition carries a fencing token that only ever grows, so a holder whose
 * lock expired (a long GC pause) can be detected by whoever checks tokens.
 */

export interface Lock {
  readonly name: string;
  /** Strictly increasing per lock name across all holders. */
  readonly fencingToken: number;
  /** Extends the TTL; false when the lock was lost (expired and maybe taken by another). */
  renew(ttlMs?: number): Promise<boolean>;
  release(): Promise<void>;
}

export interface LockManager {
  readonly kind: 'redis' | 'memory';
  /** Non-blocking: the lock, or null when another holder has it. */
  tryAcquire(name: string, ttlMs: number): Promise<Lock | null>;
  /** Runs `fn` while holding the lock, renewing it in the background; null if not acquired. */
  withLock<T>(name: string, ttlMs: number, fn: (lock: Lock) => Promise<T>): Promise<T | null>;
  close(): Promise<void>;
}

export interface RedisLockConfig {
  address: string; // host:port
  password?: string;
  db?: number;
  tls?: boolean;
  keyPrefix?: string;
}
