import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Mutex } from 'async-mutex';
import Database from 'better-sqlite3';
import { ServiceError } from '@svc/api-contract';
import { DirectoryLock, makePrivate } from '../directory-lock';
import { checkKey, checkListPrefix } from '../keys';
import { directoryUpperBound, rowAddress, storedDirectory } from '../sql/layout';
import {
  TRANSACTION_FINISHED,
  type ChangeFeed,
  type ConditionalWrite,
  type Physical,
  type PhysicalTransaction,
  type StoredEntry,
  type StoreSnapshot,
  type WalEntry,
  type WriteAheadLog,
  type LogHead,
} from '../types';
import { migrate } from './schema';
import { type EmbeddedStatements, prepareStatements, type StoreRow } from './statements';

export interface EmbeddedPhysicalOptions {
  /** Data directory; created if missing, private to the server's user, used by one server at a time. */
  path: string;
  /**
   * Set in a gateway worker: the pid of the server process that holds the directory's lock. The
   * worker opens the store beside its siblings rather than taking the directory for itself.
   */
  lockHeldBy?: number;
  /**
   * In-memory storage shared by the workers of one server: a store that lives as long as its server
   * (its directory is meant for memory-backed storage and is removed with it), so nothing is synced
   * to disk; it reports itself as `inmem`.
   */
  temporary?: boolean;
}

/** The database file inside the data directory. */
export const DATABASE_FILE = 'svc.db';
/** What a data directory of the earlier embedded format (PGlite) holds. */
const EARLIER_FORMAT_MARKER = 'PG_VERSION';
/** Tries of the write lock made in the next turns of the event loop before pausing between them. */
const QUICK_LOCK_ATTEMPTS = 50;
/** How long a write waits for another process's transaction to end before it is refused. */
const WRITE_LOCK_WAIT_MS = 60_000;
/** Change rows kept for processes catching up; one further behind reloads everything. */
const CHANGES_KEPT = 50_000;
/** Old change rows are removed once per this many changes. */
const TRIM_CHANGES_EVERY = 1_024;
/** The change row that stands for "everything" (a replaced store): no stored key is empty. */
const EVERYTHING = '';

type SqliteDatabase = Database.Database;

interface Connected {
  /** Autocommit reads: each sees every transaction committed before it. */
  reader: SqliteDatabase;
  read: EmbeddedStatements;
  /** Write transactions, one at a time in this process (and, through SQLite's lock, across processes). */
  writer: SqliteDatabase;
  write: EmbeddedStatements;
  feed: ChangesSince;
}

/** A write waiting for the next group commit. */
interface QueuedWrite {
  work(tx: WriteTransaction): unknown;
  resolve(result: unknown): void;
  reject(error: unknown): void;
}

/**
 * Durable storage without a server: SQLite in write-ahead-log mode, in one file of the data
 * directory. Every process of the server (each gateway worker) opens it itself: readers never
 * wait, writers take turns through SQLite's write lock, and every commit is synced to disk
 * before it is acknowledged. Writes that arrive while another is being committed go together in
 * the next transaction (one sync for all of them). A process learns which keys the others
 * changed from the change feed (see ChangeFeed), which every commit writes to.
 */
export class EmbeddedPhysical implements Physical {
  readonly kind: 'embedded' | 'inmem';
  private readonly directory: string;
  private readonly origin = randomUUID();
  private connected?: Connected;
  private lock?: DirectoryLock;
  private readonly writeTurns = new Mutex();
  private queued: QueuedWrite[] = [];
  /** The sync of the log under way, and the one that follows it (see `synced`). */
  private syncing?: Promise<void>;
  /** The log file, held open for its syncs. */
  private logFile?: Promise<FileHandle | undefined>;
  private nextSync?: Promise<void>;

  constructor(private readonly options: EmbeddedPhysicalOptions) {
    this.directory = resolve(options.path);
    this.kind = options.temporary ? 'inmem' : 'embedded';
  }

  async open(): Promise<void> {
    if (this.connected) throw new Error('embedded storage is already open');
    if (holdsEarlierEmbeddedFormat(this.directory)) {
      throw new Error(
        `embedded storage: ${this.directory} holds data in the format of earlier versions; ` +
          'move it to a new directory with `svc operator migrate` (storage_source "embedded" names this directory)',
      );
    }
    mkdirSync(this.directory, { recursive: true, mode: 0o700 });
    if (this.options.lockHeldBy === undefined) {
      this.lock = DirectoryLock.acquire(this.directory);
      makePrivate(this.directory);
    } else {
      DirectoryLock.requireHeldBy(this.directory, this.options.lockHeldBy);
    }
    try {
      this.connected = this.connect(join(this.directory, DATABASE_FILE));
    } catch (error) {
      this.releaseLock();
      throw error;
    }
  }

  private connect(file: string): Connected {
    // SQLite gives its log and shared-memory files the database file's mode.
    closeSync(openSync(file, 'a', 0o600));
    const writer = new Database(file);
    try {
      writer.pragma('journal_mode = WAL');
      // A commit is written to the log here and synced by `synced`, off the event loop, before it is acknowledged.
      writer.pragma(`synchronous = ${this.options.temporary ? 'OFF' : 'NORMAL'}`);
      writer.pragma('busy_timeout = 10000');
      migrate(writer);
      // From here on a busy write lock is waited for between turns of the event loop (beginWrite).
      writer.pragma('busy_timeout = 0');
      const reader = new Database(file);
      // A read waits only while a crashed process's log is recovered.
      reader.pragma('busy_timeout = 5000');
      const read = prepareStatements(reader);
      return { reader, read, writer, write: prepareStatements(writer), feed: new ChangesSince(read, this.origin) };
    } catch (error) {
      writer.close();
      throw error;
    }
  }

  async close(): Promise<void> {
    const connected = this.connected;
    if (!connected) return;
    await this.writeTurns.runExclusive(() => {
      this.connected = undefined;
      connected.reader.close();
      connected.writer.close();
    });
    const logFile = this.logFile;
    this.logFile = undefined;
    await (await logFile?.catch(() => undefined))?.close();
    this.releaseLock();
  }

  private releaseLock(): void {
    this.lock?.release();
    this.lock = undefined;
  }

  private readonly feed: ChangeFeed = {
    // Answers nothing while the store is closed.
    poll: () => this.connected?.feed.poll(),
    note: (keys) => this.noteChanges(keys),
  };

  /**
   * The feed of what the other processes opening the store commit: for a process that opens it
   * beside the one holding its lock (a gateway worker). The holder is alone with its workers' data
   * only while it has none, so it has no other writer to follow, and checking for one on every
   * request would cost it for nothing.
   */
  get changes(): ChangeFeed | undefined {
    return this.options.lockHeldBy === undefined ? undefined : this.feed;
  }

  async get(key: string): Promise<Buffer | null> {
    const { directory, name } = rowAddress(key);
    return this.connection().read.get.get(directory, name) ?? null;
  }

  async list(prefix: string): Promise<string[]> {
    return listDirectory(this.connection().read, prefix);
  }

  async put(key: string, value: Buffer): Promise<void> {
    checkKey(key);
    return this.write((tx) => tx.putNow(key, value));
  }

  async delete(key: string): Promise<void> {
    checkKey(key);
    return this.write((tx) => tx.deleteNow(key));
  }

  async writeIfUnchanged(write: ConditionalWrite): Promise<boolean> {
    for (const key of [...write.locks, ...write.unchanged.keys(), ...write.writes.keys()]) checkKey(key);
    return this.write((tx) => tx.writeIfUnchanged(write));
  }

  /** Runs `fn` in a write transaction: it sees its own writes, and readers see none of them until commit. */
  transaction<T>(fn: (tx: PhysicalTransaction) => Promise<T>): Promise<T> {
    return this.writeTransaction(fn);
  }

  private async writeTransaction<T>(fn: (tx: WriteTransaction) => Promise<T>): Promise<T> {
    const result = await this.writeTurns.runExclusive(async () => {
      const connected = this.connection();
      await this.beginWrite(connected.writer);
      const tx = new WriteTransaction(connected.write, this.origin);
      try {
        const result = await fn(tx);
        tx.commit();
        connected.writer.exec('COMMIT');
        return result;
      } catch (error) {
        rollBack(connected.writer);
        throw error;
      } finally {
        tx.finish();
      }
    });
    await this.synced();
    return result;
  }

  async scan<T>(consume: (entries: AsyncIterable<StoredEntry>) => Promise<T>): Promise<T> {
    return this.snapshot((snapshot) => consume(snapshot.entries));
  }

  /** A read transaction on a connection of its own: writers go on, and it sees none of their commits. */
  async snapshot<T>(consume: (snapshot: StoreSnapshot) => Promise<T>): Promise<T> {
    this.connection();
    const db = new Database(join(this.directory, DATABASE_FILE), { readonly: true });
    try {
      db.pragma('busy_timeout = 5000');
      const statements = prepareStatements(db);
      db.exec('BEGIN');
      // The first read fixes the transaction's point in time.
      const lastIndex = statements.lastIndex.get()!;
      return await consume({
        entries: scanRows(statements),
        lastIndex,
        meta: async (prefix) => statements.metaWithPrefix.all({ prefix }),
        entriesAfter: async (idx, limit) => statements.entriesAfter.all(idx, limit),
      });
    } finally {
      db.close();
    }
  }

  async replaceAll(entries: AsyncIterable<StoredEntry>, keep: ReadonlySet<string>): Promise<void> {
    await this.writeTransaction(async (tx) => {
      tx.replaceAll(keep);
      for await (const entry of entries) if (!keep.has(entry.key)) tx.insert(entry);
    });
  }

  readonly log: WriteAheadLog = {
    setLogging: (on) => this.write((tx) => tx.setLogging(on)),
    logging: async () => this.connection().read.logging.get() === 1,
    lastIndex: async () => this.connection().read.lastIndex.get()!,
    entriesAfter: async (idx, limit) => this.connection().read.entriesAfter.all(idx, limit),
    trimThrough: (idx) => this.write((tx) => tx.trimLog(idx)),
    getMeta: async (name) => this.connection().read.getMeta.get(name) ?? null,
    importLog: (entries, head) => this.write((tx) => tx.importLog(entries, head)),
  };

  /** Records keys that changed outside the store (a seal, an unseal) for the other processes. */
  private async noteChanges(keys: readonly string[]): Promise<void> {
    for (const key of keys) checkKey(key);
    return this.write((tx) => tx.noteChanges(keys));
  }

  /**
   * Group commit: the writes made in one turn of the event loop (every request read in it) and
   * those that arrive while a transaction holds the write turn go together in the next
   * transaction. Each write's work runs synchronously in it; each is answered once it is synced.
   */
  private write<T>(work: (tx: WriteTransaction) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.queued.push({ work, resolve: resolve as (result: unknown) => void, reject }) === 1) setImmediate(() => void this.commitQueued());
    });
  }

  private async commitQueued(): Promise<void> {
    let batch: QueuedWrite[] = [];
    try {
      const results = await this.writeTransaction(async (tx) => {
        [batch, this.queued] = [this.queued, []];
        return batch.map((queued) => queued.work(tx));
      });
      batch.forEach((queued, i) => queued.resolve(results[i]));
    } catch (error) {
      // Refused before the write lock was taken: the writes waiting are those this commit was for.
      if (batch.length === 0) [batch, this.queued] = [this.queued, []];
      for (const queued of batch) queued.reject(error);
    }
  }

  /**
   * Resolves once every commit made so far is on disk: the log file is synced on libuv's thread
   * pool, so the event loop goes on meanwhile; the commits made while one sync runs share the next.
   * (SQLite itself syncs the log before it copies it into the database, and the database after.)
   */
  private synced(): Promise<void> {
    if (this.options.temporary) return Promise.resolve();
    if (!this.syncing) {
      const sync: Promise<void> = this.syncLogFile().finally(() => {
        if (this.syncing === sync) this.syncing = undefined;
      });
      this.syncing = sync;
      return sync;
    }
    this.nextSync ??= this.syncing
      .catch(() => undefined)
      .then(() => {
        this.nextSync = undefined;
        return this.synced();
      });
    return this.nextSync;
  }

  /**
   * Flushes the log file's data to disk. The file is opened once and kept: SQLite keeps that file
   * (rewinding it after a checkpoint) while any connection is open, and this store holds two. Not
   * there yet, nothing was written to it.
   */
  private async syncLogFile(): Promise<void> {
    this.logFile ??= open(join(this.directory, `${DATABASE_FILE}-wal`), 'r').catch((error: unknown) => {
      this.logFile = undefined;
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    });
    await (await this.logFile)?.datasync();
  }

  /** Takes SQLite's write lock, waiting for another process's transaction between turns of the event loop. */
  private async beginWrite(writer: SqliteDatabase): Promise<void> {
    const giveUpAt = performance.now() + WRITE_LOCK_WAIT_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        writer.exec('BEGIN IMMEDIATE');
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
        if (performance.now() >= giveUpAt) throw ServiceError.unavailable(`embedded storage: another process has held the write lock for ${WRITE_LOCK_WAIT_MS / 1000} s`);
      }
      // A commit holds the lock for tens of microseconds (the sync comes after): the next turns of
      // the event loop are tried first, then growing pauses up to 10 ms for a long transaction.
      if (attempt <= QUICK_LOCK_ATTEMPTS) await new Promise((resolve) => setImmediate(resolve));
      else await delay(Math.min(attempt - QUICK_LOCK_ATTEMPTS, 10));
    }
  }

  private connection(): Connected {
    if (!this.connected) throw new Error('embedded storage is not open');
    return this.connected;
  }
}

/** Whether `directory` holds data of the earlier embedded format (PGlite's data files). */
export function holdsEarlierEmbeddedFormat(directory: string): boolean {
  return existsSync(join(directory, EARLIER_FORMAT_MARKER));
}

function rollBack(writer: SqliteDatabase): void {
  // A failed statement may have ended the transaction already.
  if (writer.inTransaction) writer.exec('ROLLBACK');
}

/**
 * The operations of one write transaction, on the writer connection: each statement runs at once
 * (SQLite is in this process), and the keys written are logged and put on the change feed at commit.
 */
class WriteTransaction implements PhysicalTransaction {
  private finished = false;
  /** The last write per key, in the order of the last writes (the log replays them in this order). */
  private readonly written = new Map<string, Buffer | null>();
  private readonly noted: string[] = [];
  private reset = false;

  constructor(
    private readonly statements: EmbeddedStatements,
    private readonly origin: string,
  ) {}

  async get(key: string): Promise<Buffer | null> {
    this.open();
    const { directory, name } = rowAddress(key);
    return this.statements.get.get(directory, name) ?? null;
  }

  async put(key: string, value: Buffer): Promise<void> {
    this.open();
    this.putNow(key, value);
  }

  async delete(key: string): Promise<void> {
    this.open();
    this.deleteNow(key);
  }

  async list(prefix: string): Promise<string[]> {
    this.open();
    return listDirectory(this.statements, prefix);
  }

  /** Write transactions already exclude each other, in this process and across processes. */
  async lock(key: string): Promise<void> {
    this.open();
    checkKey(key);
  }

  async putMeta(name: string, value: Buffer | null): Promise<void> {
    this.open();
    if (value === null) this.statements.deleteMeta.run(name);
    else this.statements.putMeta.run(name, value);
  }

  putNow(key: string, value: Buffer): void {
    const { directory, name } = rowAddress(key);
    this.statements.put.run(directory, name, value);
    this.remember(key, value);
  }

  deleteNow(key: string): void {
    const { directory, name } = rowAddress(key);
    if (this.statements.delete.run(directory, name).changes > 0) this.remember(key, null);
  }

  writeIfUnchanged({ unchanged, writes }: ConditionalWrite): boolean {
    for (const [key, stamp] of unchanged) {
      const { directory, name } = rowAddress(key);
      if (!stamp.matches(this.statements.get.get(directory, name) ?? null)) return false;
    }
    for (const [key, value] of writes) {
      if (value === null) this.deleteNow(key);
      else this.putNow(key, value);
    }
    return true;
  }

  setLogging(on: boolean): void {
    const flag = on ? 1 : 0;
    if (this.statements.setLogging.run(flag, flag).changes > 0 && on) this.reset = true;
  }

  trimLog(idx: number): void {
    this.statements.trimLog.run(idx);
  }

  /** Another store's log entries, indexes kept, then its head (see WriteAheadLog.importLog). */
  importLog(entries: readonly WalEntry[], head: LogHead): void {
    for (const { idx, op, key, value } of entries) this.statements.appendLog.run(idx, op, key, value);
    this.statements.setLogHead.run(head.lastIndex, head.logging ? 1 : 0);
  }

  noteChanges(keys: readonly string[]): void {
    this.noted.push(...keys);
  }

  /** Empties the store but for the keys in `keep`: the log records a reset, the change feed "everything". */
  replaceAll(keep: ReadonlySet<string>): void {
    const kept: StoredEntry[] = [];
    for (const key of keep) {
      const { directory, name } = rowAddress(key);
      const value = this.statements.get.get(directory, name);
      if (value) kept.push({ key, value });
    }
    this.statements.deleteAll.run();
    this.written.clear();
    for (const entry of kept) this.insert(entry);
    this.reset = true;
    this.noted.push(EVERYTHING);
  }

  /** Adds an entry while the store is being replaced (replaceAll logs and announces it as a whole). */
  insert({ key, value }: StoredEntry): void {
    const { directory, name } = rowAddress(key);
    this.statements.put.run(directory, name, value);
  }

  /** Logs what the transaction wrote (when logging is on) and puts its keys on the change feed. */
  commit(): void {
    const entries: Omit<WalEntry, 'idx'>[] = [];
    if (this.reset) entries.push({ op: 'reset', key: '', value: null });
    for (const [key, value] of this.written) entries.push({ op: value === null ? 'delete' : 'put', key, value });
    if (entries.length > 0) {
      const last = this.statements.takeIndexes.get(entries.length);
      if (last !== undefined) entries.forEach((entry, i) => this.statements.appendLog.run(last - entries.length + 1 + i, entry.op, entry.key, entry.value));
    }
    let seq = 0;
    for (const key of this.written.keys()) seq = this.statements.noteChange.get(this.origin, key)!;
    for (const key of this.noted) seq = this.statements.noteChange.get(this.origin, key)!;
    if (seq > 0 && seq % TRIM_CHANGES_EVERY < this.written.size + this.noted.length) this.statements.trimChanges.run(seq - CHANGES_KEPT);
  }

  finish(): void {
    this.finished = true;
  }

  private remember(key: string, value: Buffer | null): void {
    this.written.delete(key);
    this.written.set(key, value);
  }

  private open(): void {
    if (this.finished) throw new Error(TRANSACTION_FINISHED);
  }
}

/**
 * What the other processes sharing the store changed since the store was opened: `PRAGMA
 * data_version` (answered from SQLite's shared memory) tells whether anything was committed since
 * the last look; only then are the change rows read.
 */
class ChangesSince {
  private version: number;
  private lastSeq: number;

  constructor(
    private readonly statements: EmbeddedStatements,
    private readonly origin: string,
  ) {
    this.version = statements.dataVersion.get()!;
    this.lastSeq = statements.lastChange.get()!;
  }

  poll(): readonly string[] | 'everything' | undefined {
    const version = this.statements.dataVersion.get()!;
    if (version === this.version) return undefined;
    this.version = version;
    const rows = this.statements.changesAfter.all(this.lastSeq);
    if (rows.length === 0) return undefined;
    const missedSome = rows[0].seq !== this.lastSeq + 1;
    this.lastSeq = rows[rows.length - 1].seq;
    const keys = rows.filter((row) => row.origin !== this.origin).map((row) => row.key);
    if (missedSome || keys.includes(EVERYTHING)) return 'everything';
    return keys.length > 0 ? keys : undefined;
  }
}

/** Immediate children of `prefix`, sorted: the directory's own rows, then a skip scan for its sub-directories. */
function listDirectory(statements: EmbeddedStatements, prefix: string): string[] {
  const directory = storedDirectory(checkListPrefix(prefix));
  const upper = directoryUpperBound(directory);
  const children = statements.files.all(directory);
  for (let below = statements.firstDirectory.get(directory, upper); below !== undefined; ) {
    const segment = below.slice(directory.length, below.indexOf('/', directory.length));
    children.push(`${segment}/`);
    below = statements.nextDirectory.get(`${directory}${segment}0`, upper);
  }
  return children.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

async function* scanRows(statements: EmbeddedStatements): AsyncGenerator<StoredEntry> {
  for (let rows = statements.scanFirst.all(); rows.length > 0; ) {
    for (const row of rows) yield { key: row.parent_path.slice(1) + row.name, value: row.value };
    const last: StoreRow = rows[rows.length - 1];
    rows = statements.scanAfter.all(last.parent_path, last.name);
  }
}

