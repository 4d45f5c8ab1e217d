import { InvalidationEpoch } from './invalidation-epoch';
import { recordingWrites } from './recorded-transaction';
import { ForwardingPhysical } from './forwarding';
import type { ConditionalWrite, Physical, PhysicalTransaction, StoredEntry } from './types';

const DEFAULT_MAX_ENTRIES = 50_000;

/**
 * A bounded map in two generations: entries go into the young one, and when it is full the old one
 * is dropped whole and the young one takes its place; an entry read from the old one moves back.
 * Evicting one entry per insertion from a single Map (delete its first key) left the Map's table
 * full of deleted slots that every later lookup and eviction walked, until a write of new keys took
 * tens of microseconds in the cache alone.
 */
class GenerationalMap<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();

  constructor(private readonly generationSize: number) {}

  get(key: string): V | undefined {
    const young = this.young.get(key);
    if (young !== undefined) return young;
    const old = this.old.get(key);
    if (old !== undefined) this.set(key, old);
    return old;
  }

  set(key: string, value: V): void {
    this.young.set(key, value);
    if (this.young.size < this.generationSize) return;
    this.old = this.young;
    this.young = new Map();
  }

  delete(key: string): void {
    this.young.delete(key);
    this.old.delete(key);
  }

  clear(): void {
    this.young = new Map();
    this.old = new Map();
  }
}

/**
 * A read cache in front of a physical store (values as stored, i.e. ciphertext: the barrier still
 * decrypts each read). Writes through this object update the cache after they commit; writes made
 * elsewhere (another gateway replica) must be reported with `invalidate`. Reads inside a
 * transaction bypass the cache, so check-and-set under a lock always sees storage.
 */
export class CachedPhysical extends ForwardingPhysical {
  private readonly entries: GenerationalMap<Buffer | null>;
  /** A value read (or written) while an invalidation happened is returned but not kept. */
  private readonly invalidations = new InvalidationEpoch();

  constructor(inner: Physical, maxEntries = DEFAULT_MAX_ENTRIES) {
    super(inner);
    this.entries = new GenerationalMap(Math.max(1, Math.floor(maxEntries / 2)));
  }

  override async close(): Promise<void> {
    this.entries.clear();
    await this.inner.close();
  }

  peek(key: string): Buffer | null | undefined {
    return this.entries.get(key);
  }

  override get(key: string): Promise<Buffer | null> {
    const cached = this.entries.get(key);
    // A hit is answered without an async frame: the hot read path allocates as little as it can.
    return cached !== undefined ? Promise.resolve(cached) : this.load(key);
  }

  private async load(key: string): Promise<Buffer | null> {
    const before = this.invalidations.mark;
    const value = await this.inner.get(key);
    this.remember(key, value, before);
    return value;
  }

  override async put(key: string, value: Buffer): Promise<void> {
    this.entries.delete(key);
    const before = this.invalidations.mark;
    await this.inner.put(key, value);
    this.remember(key, value, before);
  }

  override async delete(key: string): Promise<void> {
    this.entries.delete(key);
    const before = this.invalidations.mark;
    await this.inner.delete(key);
    this.remember(key, null, before);
  }

  override async transaction<T>(fn: (tx: PhysicalTransaction) => Promise<T>): Promise<T> {
    const written = new Map<string, Buffer | null>();
    const before = this.invalidations.mark;
    const result = await this.inner.transaction((tx) => fn(recordingWrites(tx, (key, value) => written.set(key, value))));
    for (const [key, value] of written) this.remember(key, value, before);
    return result;
  }

  /** A write that went through is kept like a transaction's; one that did not forgets the keys it found changed. */
  override async writeIfUnchanged(write: ConditionalWrite): Promise<boolean> {
    for (const key of write.writes.keys()) this.entries.delete(key);
    const before = this.invalidations.mark;
    const written = await this.inner.writeIfUnchanged(write);
    if (written) for (const [key, value] of write.writes) this.remember(key, value, before);
    else for (const key of write.unchanged.keys()) this.entries.delete(key);
    return written;
  }

  override async replaceAll(entries: AsyncIterable<StoredEntry>, keep: ReadonlySet<string>): Promise<void> {
    try {
      await this.inner.replaceAll(entries, keep);
    } finally {
      this.clear();
    }
  }

  /** Forgets keys another process may have changed. */
  invalidate(keys: Iterable<string>): void {
    this.invalidations.advance();
    for (const key of keys) this.entries.delete(key);
  }

  clear(): void {
    this.invalidations.advance();
    this.entries.clear();
  }

  /**
   * Keeps a value read or written since `before` (the invalidation mark then). When an invalidation
   * came meanwhile, the key is forgotten instead: what the cache holds of it may be older than both.
   */
  private remember(key: string, value: Buffer | null, before: number): void {
    if (this.invalidations.unchangedSince(before)) this.entries.set(key, value);
    else this.entries.delete(key);
  }
}
