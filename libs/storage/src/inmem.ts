import { Mutex } from 'async-mutex';
import BTree from 'sorted-btree';
import { writeIfUnchangedInTransaction } from './conditional-write';
import { checkKey, checkListPrefix } from './keys';
import { TRANSACTION_FINISHED, type ConditionalWrite, type LogHead, type MetaRecord, type Physical, type PhysicalTransaction, type StoredEntry, type StoreSnapshot, type WalEntry, type WriteAheadLog } from './types';

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
 * can never mutate stored bytes. Writes are remembered (the last per key) for the log. */
class TreeOperations implements PhysicalTransaction {
  private finished = false;
  readonly written = new Map<string, Buffer | null>();
  readonly metaWritten = new Map<string, Buffer | null>();

  constructor(readonly tree: BTree<string, Buffer>) {}

  /**
   * The stored value itself, as the read cache in front of the other stores answers: callers only
   * read it, and the barrier remembers what it decrypted by the value's identity, so a copy per
   * read would be decrypted and parsed again on every read.
   */
  async get(key: string): Promise<Buffer | null> {
    return this.open().get(checkKey(key)) ?? null;
  }

  async put(key: string, value: Buffer): Promise<void> {
    const stored = Buffer.from(value);
    this.open().set(checkKey(key), stored);
    this.remember(key, stored);
  }

  async delete(key: string): Promise<void> {
    if (this.open().delete(checkKey(key))) this.remember(key, null);
  }

  async putMeta(name: string, value: Buffer | null): Promise<void> {
    this.open();
    this.metaWritten.set(name, value && Buffer.from(value));
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

  private remember(key: string, value: Buffer | null): void {
    this.written.delete(key);
    this.written.set(key, value);
  }

  private open(): BTree<string, Buffer> {
    if (this.finished) throw new Error(TRANSACTION_FINISHED);
    return this.tree;
  }
}

/** The log and metadata of an in-memory store. */
class InmemLog implements WriteAheadLog {
  entries: WalEntry[] = [];
  last = 0;
  on = false;
  meta = new Map<string, Buffer>();

  async setLogging(on: boolean): Promise<void> {
    if (on && !this.on) {
      this.on = true;
      this.append([{ op: 'reset', key: '', value: null }]);
    }
    this.on = on;
  }

  async logging(): Promise<boolean> {
    return this.on;
  }

  async lastIndex(): Promise<number> {
    return this.last;
  }

  async entriesAfter(idx: number, limit: number): Promise<WalEntry[]> {
    return entriesAfter(this.entries, idx, limit);
  }

  async trimThrough(idx: number): Promise<void> {
    this.entries = this.entries.filter((entry) => entry.idx > idx);
  }

  async getMeta(name: string): Promise<Buffer | null> {
    const value = this.meta.get(name);
    return value === undefined ? null : Buffer.from(value);
  }

  async importLog(entries: readonly WalEntry[], head: LogHead): Promise<void> {
    // entriesAfter finds an entry by its distance from the first: indexes must stay consecutive.
    let expected = this.entries.length === 0 ? entries[0]?.idx : this.entries[this.entries.length - 1].idx + 1;
    for (const entry of entries) {
      if (entry.idx !== expected || entry.idx > head.lastIndex) {
        throw new Error(`imported log entry ${entry.idx} does not follow the log (expected ${expected}, last index ${head.lastIndex})`);
      }
      expected++;
    }
    this.entries.push(...entries.map((entry) => ({ ...entry, value: entry.value && Buffer.from(entry.value) })));
    this.last = head.lastIndex;
    this.on = head.logging;
  }

  /** Appends entries when logging is on. */
  append(entries: Omit<WalEntry, 'idx'>[]): void {
    if (!this.on) return;
    for (const entry of entries) this.entries.push({ ...entry, idx: ++this.last });
  }

  commit(tx: TreeOperations): void {
    this.append([...tx.written].map(([key, value]) => ({ op: value === null ? 'delete' : 'put', key, value })));
    for (const [name, value] of tx.metaWritten) {
      if (value === null) this.meta.delete(name);
      else this.meta.set(name, value);
    }
  }
}

function entriesAfter(entries: readonly WalEntry[], idx: number, limit: number): WalEntry[] {
  // Indexes are consecutive, so the first wanted entry's position follows from the first index.
  const start = entries.length === 0 ? 0 : Math.max(0, idx + 1 - entries[0].idx);
  return entries.slice(start, start + limit).map((entry) => ({ ...entry, value: entry.value && Buffer.from(entry.value) }));
}

/**
 * Dev and test backend: a sorted in-memory map. Writers (transactions and single writes) take the
 * store's mutex one at a time; a transaction works on an O(1) copy-on-write clone of the tree
 * that replaces the committed tree only when the transaction's function returns. Readers never
 * wait: they see the committed tree.
 */
export class InmemPhysical implements Physical {
  readonly kind = 'inmem' as const;
  readonly log = new InmemLog();
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
    await this.transaction((tx) => tx.put(key, value));
  }

  async delete(key: string): Promise<void> {
    await this.transaction((tx) => tx.delete(key));
  }

  writeIfUnchanged(write: ConditionalWrite): Promise<boolean> {
    return writeIfUnchangedInTransaction(this, write);
  }

  async scan<T>(consume: (entries: AsyncIterable<StoredEntry>) => Promise<T>): Promise<T> {
    return this.snapshot((snapshot) => consume(snapshot.entries));
  }

  /** Iterates an O(1) copy-on-write clone of the committed tree: later writes do not reach it. */
  async snapshot<T>(consume: (snapshot: StoreSnapshot) => Promise<T>): Promise<T> {
    const tree = this.committed.tree.clone();
    const log = [...this.log.entries];
    const meta: MetaRecord[] = [...this.log.meta].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, value]) => ({ name, value: Buffer.from(value) }));
    async function* entries(): AsyncGenerator<StoredEntry> {
      for (const [key, value] of tree.entries()) yield { key, value: Buffer.from(value) };
    }
    return consume({
      entries: entries(),
      lastIndex: this.log.last,
      meta: async (prefix) => meta.filter((record) => record.name.startsWith(prefix)),
      entriesAfter: async (idx, limit) => entriesAfter(log, idx, limit),
    });
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
      this.log.append([{ op: 'reset', key: '', value: null }]);
    });
  }

  async transaction<T>(fn: (tx: PhysicalTransaction) => Promise<T>): Promise<T> {
    return this.writers.runExclusive(async () => {
      const draft = new TreeOperations(this.committed.tree.clone());
      try {
        const result = await fn(draft);
        this.committed = new TreeOperations(draft.tree);
        this.log.commit(draft);
        return result;
      } finally {
        draft.finish();
      }
    });
  }
}
