import type { ConditionalWrite, TransactionalStore } from './types';

/** A conditional write as a transaction: for stores whose transactions are cheap, or that have no single-step form. */
export function writeIfUnchangedInTransaction(store: TransactionalStore, { locks, unchanged, writes }: ConditionalWrite): Promise<boolean> {
  return store.transaction(async (tx) => {
    for (const key of locks) await tx.lock(key);
    for (const [key, stamp] of unchanged) if (!stamp.matches(await tx.get(key))) return false;
    for (const [key, value] of writes) await (value === null ? tx.delete(key) : tx.put(key, value));
    return true;
  });
}
