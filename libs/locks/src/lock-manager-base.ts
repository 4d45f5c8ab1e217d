import { randomUUID } from 'node:crypto';
import { keepRenewed } from './renewal';
import { Lock, LockManager } from './types';

/**
 * What both managers share: validation, lock handles and `withLock`. A backend only says how to
 * take, extend and give up ownership, each one atomic and conditional on the owner value.
 */
export abstract class LockManagerBase implements LockManager {
  abstract readonly kind: LockManager['kind'];
  private closed = false;

  /** The new fencing token, or null when someone else holds `name`. */
  protected abstract takeOwnership(name: string, owner: string, ttlMs: number): Promise<number | null>;
  /** False when `owner` no longer holds `name`. */
  protected abstract extendOwnership(name: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Gives up `name` if `owner` still holds it; never touches another holder's lock. */
  protected abstract dropOwnership(name: string, owner: string): Promise<void>;
  protected abstract disconnect(): Promise<void>;

  async tryAcquire(name: string, ttlMs: number): Promise<Lock | null> {
    if (this.closed) throw new Error('lock manager is closed');
    validateName(name);
    validateTtl(ttlMs);
    const owner = randomUUID();
    const fencingToken = await this.takeOwnership(name, owner, ttlMs);
    if (fencingToken === null) return null;
    return {
      name,
      fencingToken,
      renew: async (renewTtlMs = ttlMs) => {
        validateTtl(renewTtlMs);
        return this.extendOwnership(name, owner, renewTtlMs);
      },
      release: () => this.dropOwnership(name, owner),
    };
  }

  async withLock<T>(name: string, ttlMs: number, fn: (lock: Lock) => Promise<T>): Promise<T | null> {
    const lock = await this.tryAcquire(name, ttlMs);
    if (!lock) return null;
    const renewal = keepRenewed(lock, ttlMs);
    try {
      return await fn(lock);
    } finally {
      await renewal.stop();
      // If the store cannot be reached the lock simply expires after its TTL; the callback's
      // outcome matters more than reporting that.
      await lock.release().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.disconnect();
  }
}

function validateName(name: string): void {
  if (typeof name !== 'string' || name.length === 0) throw new Error('lock name must be a non-empty string');
}

function validateTtl(ttlMs: number): void {
  if (!Number.isInteger(ttlMs) || ttlMs <= 0) {
    throw new Error(`lock TTL must be a positive whole number of milliseconds, got ${ttlMs}`);
  }
}
