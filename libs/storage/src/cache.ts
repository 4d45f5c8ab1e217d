import type { Physical, PhysicalTransaction, StoredEntry, StoreSnapshot, WriteAheadLog } from './types';

const DEFAULT_MAX_ENTRIES = 50_000;

/**
 * A read cache in front of a physical store (values as stored, i.e. ciphertext: the barrier still
 * decrypts each read). Writes through this object update the cache after they commit; writes made
 * elsewhere (another gateway replica) must be reported with `invalidate`. Reads inside a
 * transaction bypass the cache, so check-and-set under a lock always sees storage.
 */
export class CachedPhysical implements Physical {
  private readonly entries = new Map<string, Buffer | null>();
  /**
   * Counts invalidations: a value read (or written) while one happened may be older than the
   * change it announced, so it is returned but not kept.
   */
  private invalidations = 0;

  constructor(
    private readonly inner: Physical,
    private readonly maxEntries = DEFAULT_MAX_ENTRIES,
  ) {}

  get kind(): Physical['kind'] {
    return this.inner.kind;
  }

  open(): Promise<void> {
    return this.inner.open();
  }

  async close(): Promise<void> {
    this.entries.clear();
    await this.inner.close();
  }

  async get(key: string): Promise<Buffer | null> {
    const cached = this.entries.get(key);
    if (cached !== undefined) return cached;
    const before = this.invalidations;
    const value = await this.inner.get(key);
    this.remember(key, value, before);
    return value;
  }

  async put(key: string, value: Buffer): Promise<void> {
    this.entries.delete(key);
    const before = this.invalidations;
    await this.inner.put(key, value);
    this.remember(key, value, before);
  }

  async delete(key: string): Promise<void> {
    this.entries.delete(key);
    const before = this.invalidations;
    await this.inner.delete(key);
    this.remember(key, null, before);
  }

  list(prefix: string): Promise<string[]> {
    return this.inner.list(prefix);
  }

  get log(): WriteAheadLog {
    return this.inner.log;
  }

  async transaction<T>(fn: (tx: PhysicalTransaction) => Promise<T>): Promise<T> {
    const written = new Map<string, Buffer | null>();
    const before = this.invalidations;
    const result = await this.inner.transaction((tx) =>
      fn({
        get: (key) => tx.get(key),
        list: (prefix) => tx.list(prefix),
        lock: (key) => tx.lock(key),
        putMeta: (name, value) => tx.putMeta(name, value),
        put: async (key, value) => {
          await tx.put(key, value);
          written.set(key, value);
        },
        delete: async (key) => {
          await tx.delete(key);
          written.set(key, null);
        },
      }),
    );
    for (const [key, value] of written) this.remember(key, value, before);
    return result;
  }

  scan<T>(consume: (entries: AsyncIterable<StoredEntry>) => Promise<T>): Promise<T> {
    return this.inner.scan(consume);
  }

  snapshot<T>(consume: (snapshot: StoreSnapshot) => Promise<T>): Promise<T> {
    return this.inner.snapshot(consume);
  }

  async replaceAll(entries: AsyncIterable<StoredEntry>, keep: ReadonlySet<string>): Promise<void> {
    try {
      await this.inner.replaceAll(entries, keep);
    } finally {
      this.clear();
    }
  }

  /** Forgets keys another process may have changed. */
  invalidate(keys: Iterable<string>): void {
    this.invalidations++;
    for (const key of keys) this.entries.delete(key);
  }

  clear(): void {
    this.invalidations++;
    this.entries.clear();
  }

  /** Keeps a value read or written since `before` (the invalidation count then), unless an invalidation came meanwhile. */
  private remember(key: string, value: Buffer | null, before: number): void {
    if (this.invalidations !== before) return;
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, value);
  }
}
