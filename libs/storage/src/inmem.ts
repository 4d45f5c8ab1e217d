import { Mutex } from 'async-mutex';
import BTree from 'sorted-btree';
import { checkKey, checkListPrefix } from './keys';
import { TRANSACTION_FINISHED, type Physical, type StoredEntry, type Transaction } from './types';

/**
 * Immediate children of `prefix` in a sorted key space. Keys under a sub-directory are skipped
 * with one seek: every key starting with `<prefix><dir>/` sorts below `<prefix><dir>0` ('0' is
 * the character after '/').
 */
function listChildren(tree: BTree<string, Buffer>, prefix: string): string[] {
  const children: string[] = [];
  let key = tree.getPairOrNextHigher(prefix)?.[0];
  while (key !== undefined && key.startsWith(prefix)) {
    const rest = key.slice(prefix.length);
    const slash = rest.indexOf('/');
    if (slash < 0) {
      children.push(rest);
      key = tree.nextHigherKey(key);
    } else {
      children.push(rest.slice(0, slash + 1));
      key = tree.getPairOrNextHigher(`${prefix}${rest.slice(0, slash)}0`)?.[0];
    }
  }
  return children;
}

/** Key/value operations over one version of the tree; values are copied in and out so callers
 * can never mutate stored bytes. */
class TreeOperations implements Transaction {
  private finished = false;

  constructor(readonly tree: BTree<string, Buffer>) {}

  async get(key: string): Promise<Buffer | null> {
    const value = this.open().get(checkKey(key));
    return value === undefined ? null : Buffer.from(value);
  }

  async put(key: string, value: Buffer): Promise<void> {
    this.open().set(checkKey(key), Buffer.from(value));
  }

  async delete(key: string): Promise<void> {
    this.open().delete(checkKey(key));
  }

  async list(prefix: string): Promise<string[]> {
    return listChildren(this.open(), checkListPrefix(prefix));
  }

  /** Transactions on one in-memory store already run one at a time. */
  async lock(key: string): Promise<void> {
    checkKey(key);
    this.open();
  }

  finish(): void {
    this.finished = true;
  }

  private open(): BTree<string, Buffer> {
    if (this.finished) throw new Error(TRANSACTION_FINISHED);
    return this.tree;
  }
}

/**
 * Dev and test backend: a sorted in-memory map. Writers (transactions and single writes) take the
 * store's mutex one at a time; a transaction works on an O(1) copy-on-write clone of the tree
 * that replaces the committed tree only when the transaction's function returns. Readers never
 * wait: they see the committed tree.
 */
export class InmemPhysical implements Physical {
  readonly kind = 'inmem' as const;
  private committed = new TreeOperations(new BTree<string, Buffer>());
  private readonly writers = new Mutex();

  async open(): Promise<void> {}

  async close(): Promise<void> {}

  async get(key: string): Promise<Buffer | null> {
    return this.committed.get(key);
  }

  async list(prefix: string): Promise<string[]> {
    return this.committed.list(prefix);
  }

  async put(key: string, value: Buffer): Promise<void> {
    return this.writers.runExclusive(() => this.committed.put(key, value));
  }

  async delete(key: string): Promise<void> {
    return this.writers.runExclusive(() => this.committed.delete(key));
  }

  /** Iterates an O(1) copy-on-write clone of the committed tree: later writes do not reach it. */
  async scan<T>(consume: (entries: AsyncIterable<StoredEntry>) => Promise<T>): Promise<T> {
    const tree = this.committed.tree.clone();
    async function* entries(): AsyncGenerator<StoredEntry> {
      for (const [key, value] of tree.entries()) yield { key, value: Buffer.from(value) };
    }
    return consume(entries());
  }

  async replaceAll(entries: AsyncIterable<StoredEntry>, keep: ReadonlySet<string>): Promise<void> {
    await this.writers.runExclusive(async () => {
      const tree = new BTree<string, Buffer>();
      for (const key of keep) {
        const value = this.committed.tree.get(key);
        if (value !== undefined) tree.set(key, value);
      }
      for await (const { key, value } of entries) if (!keep.has(key)) tree.set(checkKey(key), Buffer.from(value));
      this.committed = new TreeOperations(tree);
    });
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.writers.runExclusive(async () => {
      const draft = new TreeOperations(this.committed.tree.clone());
      try {
        const result = await fn(draft);
        this.committed = new TreeOperations(draft.tree);
        return result;
      } finally {
        draft.finish();
      }
    });
  }
}
