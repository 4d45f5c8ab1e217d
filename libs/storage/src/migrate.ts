import type { KeyValueStore, LogHead, Physical, StoredEntry, StoreSnapshot } from './types';

/**
 * The record a storage migration keeps in its destination while it copies (Vault's
 * `core/migration`): a server refuses to start on a store that holds it, since the store is
 * incomplete until the migration ends, which removes it.
 */
export const MIGRATION_LOCK_KEY = 'core/migration';

export interface MigrationLock {
  /** When the migration began (ISO 8601). */
  started: string;
  /** Every key below this one has been copied: an interrupted migration resumes from here (`-start`). */
  resumeFrom: string;
}

export type MigrationProgress =
  | { phase: 'entries'; copied: number; resumeFrom: string }
  | { phase: 'metadata'; copied: number }
  | { phase: 'log'; copied: number };

export interface MigrationOptions {
  /** Copies only the keys from this one on (resuming an interrupted migration); the destination need not be empty then. */
  start?: string;
  /** Stops the migration once the batch under way is written. */
  signal?: AbortSignal;
  /** Told after each batch is written. */
  onProgress?: (progress: MigrationProgress) => void;
  /** Entries, metadata records or log entries written per transaction of the destination. */
  batchSize?: number;
}

export interface MigrationResult {
  entries: number;
  metadata: number;
  logEntries: number;
  log: LogHead;
}

/** A migration that stopped part way (a failure, or its signal): it resumes from `resumeFrom`. */
export class MigrationStopped extends Error {
  constructor(
    readonly resumeFrom: string,
    readonly copied: number,
    cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = 'MigrationStopped';
  }
}

const DEFAULT_BATCH_SIZE = 500;
/** A batch of entries is written once its values reach this size, however few they are. */
const BATCH_BYTES = 16 * 1024 * 1024;

/** The migration lock a store holds, if any. */
export async function readMigrationLock(store: KeyValueStore): Promise<MigrationLock | undefined> {
  const stored = await store.get(MIGRATION_LOCK_KEY);
  if (!stored) return undefined;
  try {
    const { started, resumeFrom } = JSON.parse(stored.toString('utf8')) as Partial<MigrationLock>;
    if (typeof started === 'string' && typeof resumeFrom === 'string') return { started, resumeFrom };
  } catch {
    // An unreadable lock is still a lock.
  }
  return { started: 'an unknown time', resumeFrom: '' };
}

/** How to resume from `resumeFrom`, as the operator types it. */
export function resumeHint(resumeFrom: string): string {
  return resumeFrom === '' ? 'run it again with -start="" (from the first key)' : `run it again with -start=${JSON.stringify(resumeFrom)}`;
}

/** What a server checks before it uses a store: none that an unfinished migration is still filling. */
export async function refuseUnfinishedMigration(store: KeyValueStore): Promise<void> {
  const lock = await readMigrationLock(store);
  if (lock) {
    throw new Error(
      `this storage is the destination of a storage migration that has not finished (started ${lock.started}), so its data is incomplete: ` +
        `finish the migration (svc operator migrate: ${resumeHint(lock.resumeFrom)}), or clear its lock with svc operator migrate -reset ` +
        'if the store is to be used as it is',
    );
  }
}

/** Removes the migration lock of a migration that will not finish (`-reset`); answers the lock it removed. */
export async function clearMigrationLock(store: KeyValueStore): Promise<MigrationLock | undefined> {
  const lock = await readMigrationLock(store);
  if (lock) await store.delete(MIGRATION_LOCK_KEY);
  return lock;
}

/** The directory part of a key ('' for a key at the top). */
function directoryOf(key: string): string {
  return key.slice(0, key.lastIndexOf('/') + 1);
}

async function refuseUnusable(source: Physical, destination: Physical, start: string | undefined): Promise<MigrationLock | undefined> {
  const sourceLock = await readMigrationLock(source);
  if (sourceLock) {
    throw new Error(
      `the source is itself the destination of a storage migration that has not finished (started ${sourceLock.started}): ` +
        'its data is incomplete; finish that migration first',
    );
  }
  const lock = await readMigrationLock(destination);
  if (start === undefined) {
    if (lock) {
      throw new Error(
        `the destination holds the lock of a migration into it that has not finished (started ${lock.started}): ` +
          `to resume it, ${resumeHint(lock.resumeFrom)}; to start again, use an empty destination`,
      );
    }
    if (!(await isEmpty(destination))) {
      throw new Error('the destination is not empty: migrate into a new table or data directory (or resume an interrupted migration with -start)');
    }
  } else if (lock && start > lock.resumeFrom) {
    throw new Error(
      `-start=${JSON.stringify(start)} is past where the interrupted migration stopped (${JSON.stringify(lock.resumeFrom)}): ` +
        `the keys in between would be missing; ${resumeHint(lock.resumeFrom)}`,
    );
  }
  return lock;
}

async function isEmpty(store: Physical): Promise<boolean> {
  if ((await store.list('')).length > 0 || (await store.log.lastIndex()) > 0) return false;
  return (await store.snapshot((snapshot) => snapshot.meta(''))).length === 0;
}

/**
 * Copies a whole store into another, offline (nothing else may use either): every data entry as
 * stored (barrier ciphertext and seal entries: nothing is decrypted), then the replication
 * metadata, then the write-ahead log with its indexes, last index and logging switch, so a
 * replication primary keeps its log and Merkle index. The source is read from one snapshot and is
 * not changed. Constant memory: entries stream in batches, each written in one transaction of the
 * destination together with the migration lock (`MIGRATION_LOCK_KEY`), which records how far the
 * copy got and is removed at the end.
 *
 * Resuming: a store scans its entries in key order or in (directory, name) order (SQL storage
 * reads its index so). Either way, once an entry is read, every key below its directory has been
 * read; so the highest directory of the entries written is where a stopped migration resumes
 * (`-start`, keys from that one on), and the copy checks that no key below it comes later.
 */
export async function migrateStorage(source: Physical, destination: Physical, options: MigrationOptions = {}): Promise<MigrationResult> {
  const { start, signal, onProgress = () => undefined, batchSize = DEFAULT_BATCH_SIZE } = options;
  const earlier = await refuseUnusable(source, destination, start);
  // Read here: an embedded store serves nothing else while its snapshot is open.
  const logging = await source.log.logging();
  const lock: MigrationLock = { started: earlier?.started ?? new Date().toISOString(), resumeFrom: start ?? '' };
  // The destination logs nothing of the copy: its log is to be the source's.
  await destination.log.setLogging(false);
  await destination.put(MIGRATION_LOCK_KEY, lockBytes(lock));
  let copied = 0;
  const stopIfAsked = () => {
    if (signal?.aborted) throw new Error('the migration was interrupted');
  };
  try {
    const result = await source.snapshot(async (snapshot) => {
      let batch: StoredEntry[] = [];
      let batchBytes = 0;
      let highestDirectory = lock.resumeFrom;
      const writeBatch = async () => {
        const entries = batch;
        const progress = { ...lock, resumeFrom: highestDirectory };
        await destination.transaction(async (tx) => {
          for (const { key, value } of entries) await tx.put(key, value);
          await tx.put(MIGRATION_LOCK_KEY, lockBytes(progress));
        });
        lock.resumeFrom = progress.resumeFrom;
        copied += entries.length;
        batch = [];
        batchBytes = 0;
        onProgress({ phase: 'entries', copied, resumeFrom: lock.resumeFrom });
        stopIfAsked();
      };
      for await (const entry of snapshot.entries) {
        if (entry.key === MIGRATION_LOCK_KEY || (start !== undefined && entry.key < start)) continue;
        if (entry.key < highestDirectory) {
          throw new Error(`the source lists ${JSON.stringify(entry.key)} after keys under ${JSON.stringify(highestDirectory)}: an order this migration cannot resume from`);
        }
        const directory = directoryOf(entry.key);
        if (directory > highestDirectory) highestDirectory = directory;
        batch.push(entry);
        batchBytes += entry.value.length;
        if (batch.length >= batchSize || batchBytes >= BATCH_BYTES) await writeBatch();
      }
      if (batch.length > 0) await writeBatch();
      const metadata = await copyMetadata(snapshot, destination, batchSize, (count) => (onProgress({ phase: 'metadata', copied: count }), stopIfAsked()));
      const logEntries = await copyLog(snapshot, destination, batchSize, (count) => (onProgress({ phase: 'log', copied: count }), stopIfAsked()));
      return { entries: copied, metadata, logEntries, log: { lastIndex: snapshot.lastIndex, logging } };
    });
    await destination.delete(MIGRATION_LOCK_KEY);
    // Last: once logging is on, the destination's own writes would be logged.
    await destination.log.importLog([], result.log);
    return result;
  } catch (error) {
    throw new MigrationStopped(lock.resumeFrom, copied, error);
  }
}

function lockBytes(lock: MigrationLock): Buffer {
  return Buffer.from(JSON.stringify(lock));
}

/** Every metadata record of the snapshot, a batch per transaction (the records are read whole: a server keeps them in memory too). */
async function copyMetadata(snapshot: StoreSnapshot, destination: Physical, batchSize: number, written: (count: number) => void): Promise<number> {
  const records = await snapshot.meta('');
  for (let from = 0; from < records.length; from += batchSize) {
    const batch = records.slice(from, from + batchSize);
    await destination.transaction(async (tx) => {
      for (const { name, value } of batch) await tx.putMeta(name, value);
    });
    written(from + batch.length);
  }
  return records.length;
}

/** The snapshot's log, replacing whatever log the destination holds (an interrupted migration's part). */
async function copyLog(snapshot: StoreSnapshot, destination: Physical, batchSize: number, written: (count: number) => void): Promise<number> {
  await destination.log.trimThrough(Number.MAX_SAFE_INTEGER);
  const head: LogHead = { lastIndex: snapshot.lastIndex, logging: false };
  let count = 0;
  for (let after = 0; ; ) {
    const entries = await snapshot.entriesAfter(after, batchSize);
    if (entries.length === 0) return count;
    await destination.log.importLog(entries, head);
    count += entries.length;
    after = entries[entries.length - 1].idx;
    written(count);
  }
}
