/**
 * Storage layers, bottom to top:
 *   Physical  - raw bytes by key (postgresql, embedded, inmem). Keys are '/'-separated paths.
 *   Barrier   - encrypts every value (AES-256-GCM, keyring terms, path as associated data).
 *   StorageView - a prefix of the barrier (one mount sees only `logical/<uuid>/`).
 * All layers share the same operations so a view can be handed to any handler.
 */

export interface KeyValueStore {
  get(key: string): Promise<Buffer | null>;
  put(key: string, value: Buffer): Promise<void>;
  delete(key: string): Promise<void>;
  /**
   * Directory listing: the immediate children of `prefix` (which is '' or ends in '/'), sorted;
   * sub-directories are returned once, with a trailing '/'.
   */
  list(prefix: string): Promise<string[]>;
}

/** What every backend's transaction handle answers once its transaction has ended. */
export const TRANSACTION_FINISHED = 'storage transaction already finished';

/** Operations inside a transaction. `lock` serializes transactions touching the same key across
 * processes (PostgreSQL advisory lock) so read-modify-write (check-and-set) is safe. */
export interface Transaction extends KeyValueStore {
  lock(key: string): Promise<void>;
}

export interface TransactionalStore extends KeyValueStore {
  /** Runs `fn` atomically: all writes commit together or none do (on throw). */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
}

/** One stored entry as the physical store holds it (barrier ciphertext, or a seal entry). */
export interface StoredEntry {
  key: string;
  value: Buffer;
}

export interface Physical extends TransactionalStore {
  readonly kind: 'postgresql' | 'embedded' | 'inmem';
  /** Set when the store is reached through another process (`BusPhysical`): reads are worth caching even in memory. */
  readonly remote?: boolean;
  /** Opens connections and runs migrations. */
  open(): Promise<void>;
  close(): Promise<void>;
  /**
   * Hands `consume` every entry of the store as of one point in time, a batch at a time (constant
   * memory whatever the size of the store); writes made meanwhile are not seen. The embedded
   * store serves nothing else until `consume` returns.
   */
  scan<T>(consume: (entries: AsyncIterable<StoredEntry>) => Promise<T>): Promise<T>;
  /**
   * Replaces the whole store with `entries` in one transaction, except the keys in `keep`, whose
   * current entries stay (an entry of `entries` under such a key is skipped).
   */
  replaceAll(entries: AsyncIterable<StoredEntry>, keep: ReadonlySet<string>): Promise<void>;
}

/** A change that passed through the barrier; listeners hook replication, snapshots, cache invalidation. */
export interface WriteEvent {
  op: 'put' | 'delete';
  key: string;
}

export interface StorageView extends TransactionalStore {
  /** Prefix of this view inside the barrier, ending in '/' (or '' for the whole barrier). */
  readonly prefix: string;
  /** A narrower view: `view.sub('a/')` sees keys under `<prefix>a/`. */
  sub(prefix: string): StorageView;
  getJSON<T>(key: string): Promise<T | null>;
  putJSON(key: string, value: unknown): Promise<void>;
}

export interface StorageConfig {
  type: 'postgresql' | 'embedded' | 'inmem';
  /** postgresql: connection_url (postgres://...), table, max_connections. embedded: path. */
  options: Record<string, string | number | boolean>;
}
