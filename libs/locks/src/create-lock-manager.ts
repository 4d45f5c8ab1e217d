import { MemoryLockManager } from './memory-lock-manager';
import { RedisLockManager } from './redis-lock-manager';
import { LockManager, RedisLockConfig } from './types';

/** Redis when configured (distributed), otherwise in-process locks (all-in-one). */
export function createLockManager(config?: RedisLockConfig): LockManager {
  return config ? new RedisLockManager(config) : new MemoryLockManager();
}
