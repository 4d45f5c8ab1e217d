/**
 * Storage layers, bottom to top:
 *   Physical  - raw bytes by key (postgresql, embedded, inmem). Keys are '/'-separated paths.
 *   Barrier   - encrypts every value (AES-256-GCM, keyring terms, path as associated data).
 *   StorageView - a prefix of the barrier (one mount sees only `logical/<uuid>/`).
 * All layers share the same operations so a view can be handed to any handler.
 */

export interface KeyValueStore {
  /** The value at `key`; a physical store may answer the same Buffer on every read, which callers must not change. */
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

/**
 * Turns a stored value's plaintext into the form its readers share: the barrier remembers the
 * result with the cached value, so a hot key is decoded once rather than on every read. It must
 * return what no reader can change (a string, a frozen object) and must not keep the plaintext.
 */
export type SharedDecoder<T> = (plaintext: Buffer) => T;

/**
 * What a key held when it was read, for a conditional write to compare (see ConditionalWrite):
 * the value as the store that read it holds it (ciphertext below the barrier). `ABSENT` stands for
 * a key that was found absent, or that is expected to be.
 */
export class ReadStamp {
  static readonly ABSENT = new ReadStamp(null);

  constructor(readonly stored: Buffer | null) {}

  /** Whether `current`, as the same store holds it now, is what was read. */
  matches(current: Buffer | null): boolean {
    return current === null || this.stored === null ? current === this.stored : current.equals(this.stored);
  }
}

/** A value read for a conditional write: what it decodes to, and its stamp. */
export interface StampedValue<T> {
  value: T | null;
  stamp: ReadStamp;
}

/**
 * A write made in one step only if nothing changed since it was computed: `locks` are taken first
 * (as `Transaction.lock` takes them, in this order, so it excludes the transactions that take
 * them too), then every key of `unchanged` must still match its stamp; only then are `writes` made
 * (null deletes) and logged, as a transaction's are. One round trip on SQL storage.
 */
export interface ConditionalWrite {
  locks: readonly string[];
  unchanged: ReadonlyMap<string, ReadStamp>;
  writes: ReadonlyMap<string, Buffer | null>;
}

export interface TransactionalStore extends KeyValueStore {
  /** Runs `fn` atomically: all writes commit together or none do (on throw). */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /** `get`, then `decode` (see SharedDecoder), on a store that remembers decoded values (the barrier). */
  getDecoded?<T>(key: string, decode: SharedDecoder<T>): Promise<T | null>;
  /** `get`, then `decode`, with the stamp a conditional write compares, on a store that stamps its own way (the barrier). */
  getStamped?<T>(key: string, decode: SharedDecoder<T>): Promise<StampedValue<T>>;
  /** Answers whether it wrote; on a store without its own, a transaction does it (see writeIfUnchangedInTransaction). */
  writeIfUnchanged?(write: ConditionalWrite): Promise<boolean>;
  /** What a read cache holds of a key, without a round trip (null: known absent); undefined when it holds nothing. */
  peek?(key: string): Buffer | null | undefined;
  /** `peek`, decoded (the barrier, over a physical store with a read cache). */
  peekDecoded?<T>(key: string, decode: SharedDecoder<T>): T | null | undefined;
  /** `peek`, decoded and stamped (the barrier, over a physical store with a read cache). */
  peekStamped?<T>(key: string, decode: SharedDecoder<T>): StampedValue<T> | undefined;
}

/** One stored entry as the physical store holds it (barrier ciphertext, or a seal entry). */
export interface StoredEntry {
  key: string;
  value: Buffer;
}

/**
 * One entry of the write-ahead log: a physical write as committed, in commit order (`idx` counts
 * from 1 and has no gaps). `reset` marks a change the log does not describe key by key (logging
 * switched on after unlogged writes, a snapshot restored): readers rebuild from the store.
 */
export interface WalEntry {
  idx: number;
  op: 'put' | 'delete' | 'reset';
  key: string;
  /** The value as stored (barrier ciphertext); null for `delete` and `reset`. */
  value: Buffer | null;
}

/** A named record of the replication metadata beside the store (Merkle pages, replication state). */
export interface MetaRecord {
  name: string;
  value: Buffer;
}

/** A transaction on the physical store, which can also write replication metadata atomically with the data. */
export interface PhysicalTransaction extends Transaction {
  /** Sets (or, given null, removes) a metadata record when the transaction commits. */
  putMeta(name: string, value: Buffer | null): Promise<void>;
}

/** Everything of the store as of one point in time (a repeatable-read transaction). */
export interface StoreSnapshot {
  /** Every data entry, a batch at a time; can be iterated once. */
  entries: AsyncIterable<StoredEntry>;
  /** Index of the last log entry committed at this point (0 when the log is empty). */
  lastIndex: number;
  /** Metadata records whose names start with `prefix`, sorted by name. */
  meta(prefix: string): Promise<MetaRecord[]>;
  /** Log entries after `idx`, at most `limit`, in order. */
  entriesAfter(idx: number, limit: number): Promise<WalEntry[]>;
}

/**
 * The write-ahead log beside a physical store. While logging is on, every write (single or in a
 * transaction) appends its entry in the same database transaction as the data, so a crash never
 * leaves the two apart. The switch lives in the store itself, so every process writing to it
 * agrees on it at every commit.
 */
export interface WriteAheadLog {
  /** Switches logging on (appending a `reset` entry: earlier writes were not logged) or off. */
  setLogging(on: boolean): Promise<void>;
  logging(): Promise<boolean>;
  lastIndex(): Promise<number>;
  entriesAfter(idx: number, limit: number): Promise<WalEntry[]>;
  /** Removes the entries up to and including `idx`. */
  trimThrough(idx: number): Promise<void>;
  getMeta(name: string): Promise<Buffer | null>;
  /**
   * Adds another store's log entries as they are, indexes kept (consecutive, after every entry this
   * log holds), then sets the last index and the logging switch to `head`'s, appending no `reset`:
   * how a storage migration carries a log over. Nothing else may write the store meanwhile.
   */
  importLog(entries: readonly WalEntry[], head: LogHead): Promise<void>;
}

/** Where a log stands: the last index handed out (entries up to it may have been trimmed) and whether writes are logged. */
export interface LogHead {
  lastIndex: number;
  logging: boolean;
}

/**
 * What the other processes sharing a store (the gateway workers on the embedded store) committed,
 * for a process to bring its caches up to date before it answers.
 */
export interface ChangeFeed {
  /**
   * The keys the others committed since the last poll; 'everything' when the feed no longer holds
   * all of them (or the store was replaced); undefined when they committed nothing.
   */
  poll(): readonly string[] | 'everything' | undefined;
  /** Puts keys that changed outside the store (a seal, an unseal) on the feed, for the others. */
  note(keys: readonly string[]): Promise<void>;
}

export interface Physical extends TransactionalStore {
  readonly kind: 'postgresql' | 'embedded' | 'inmem';
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
   * current entries stay (an entry of `entries` under such a key is skipped); logged as `reset`.
   */
  replaceAll(entries: AsyncIterable<StoredEntry>, keep: ReadonlySet<string>): Promise<void>;
  /** Like `transaction`, with the replication metadata writable in the same transaction. */
  transaction<T>(fn: (tx: PhysicalTransaction) => Promise<T>): Promise<T>;
  /** Runs `consume` on the store, its log and its metadata as of one point in time (see `scan`). */
  snapshot<T>(consume: (snapshot: StoreSnapshot) => Promise<T>): Promise<T>;
  writeIfUnchanged(write: ConditionalWrite): Promise<boolean>;
  readonly log: WriteAheadLog;
  /** Set on a store that several processes open themselves (embedded). */
  readonly changes?: ChangeFeed;
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
  /** `get`, then `decode`: the decoded value is shared with every other reader of the same stored value (see SharedDecoder). */
  getDecoded<T>(key: string, decode: SharedDecoder<T>): Promise<T | null>;
  /** `getDecoded`, with the stamp a conditional write compares. */
  getStamped<T>(key: string, decode: SharedDecoder<T>): Promise<StampedValue<T>>;
  /** `getDecoded` from the read cache alone: undefined when the cache holds nothing of the key (or there is none). */
  peekDecoded<T>(key: string, decode: SharedDecoder<T>): T | null | undefined;
  /** `getStamped` from the read cache alone: undefined when the cache holds nothing of the key (or there is none). */
  peekStamped<T>(key: string, decode: SharedDecoder<T>): StampedValue<T> | undefined;
  /** A conditional write (see ConditionalWrite) of keys relative to the view; answers whether it wrote. */
  writeIfUnchanged(write: ConditionalWrite): Promise<boolean>;
}

export interface StorageConfig {
  type: 'postgresql' | 'embedded' | 'inmem';
  /** postgresql: connection_url (postgres://...), table, max_connections. embedded: path. */
  options: Record<string, string | number | boolean>;
}
