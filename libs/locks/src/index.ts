export * from './types';
export { RedisLockManager, DEFAULT_LOCK_KEY_PREFIX } from './redis-lock-manager';
export { MemoryLockManager, MemoryLockTable } from './memory-lock-manager';
export { createLockManager } from './create-lock-manager';
export { BusLockManager, serveLockTable } from './bus-lock-manager';
