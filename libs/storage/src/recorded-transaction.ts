import type { PhysicalTransaction } from './types';

/**
 * `tx`, with each write it makes handed to `written` (the value, or null for a deletion) once the
 * store took it: for stores in front of another that act on a transaction's writes after it commits.
 */
export function recordingWrites(tx: PhysicalTransaction, written: (key: string, value: Buffer | null) => void): PhysicalTransaction {
  return {
    get: (key) => tx.get(key),
    list: (prefix) => tx.list(prefix),
    lock: (key) => tx.lock(key),
    putMeta: (name, value) => tx.putMeta(name, value),
    put: async (key, value) => {
      await tx.put(key, value);
      written(key, value);
    },
    delete: async (key) => {
      await tx.delete(key);
      written(key, null);
    },
  };
}
