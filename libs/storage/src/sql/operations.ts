import { checkKey } from '../keys';
import { TRANSACTION_FINISHED, type ConditionalWrite, type LogHead, type MetaRecord, type PhysicalTransaction, type WalEntry } from '../types';
import { directoryUpperBound, rowAddress, storedDirectory, type RowAddress } from './layout';
import type { ConditionalWriteShape, Statement, StoreStatements } from './statements';

export type Row = Record<string, unknown>;
/** Sends one statement with its parameters over a connection (pool, client or PGlite). */
export type RunStatement = (statement: Statement, values: unknown[]) => Promise<Row[]>;

/** pg returns bytea as Buffer, PGlite as Uint8Array; both become a Buffer without copying. */
export function asBuffer(value: unknown): Buffer {
  const bytes = value as Uint8Array;
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** bigint columns arrive as strings (pg) or bigints (PGlite); log indexes stay far below 2^53. */
function asIndex(value: unknown): number {
  return Number(value);
}

function walEntry(row: Row): WalEntry {
  return { idx: asIndex(row.idx), op: row.op as WalEntry['op'], key: row.key as string, value: row.value === null ? null : asBuffer(row.value) };
}

export function shapeOf({ locks, unchanged, writes }: ConditionalWrite): ConditionalWriteShape {
  return { locks: locks.length, checks: unchanged.size, writes: writes.size };
}

/** Appends a conditional write's parameters to `values`, in the order its statement takes them. */
function conditionalWriteValues({ locks, unchanged, writes }: ConditionalWrite, values: unknown[]): unknown[] {
  for (const key of locks) values.push(checkKey(key));
  for (const [key, stamp] of unchanged) {
    const { directory, name } = rowAddress(key);
    values.push(directory, name, stamp.stored);
  }
  for (const [key, value] of writes) {
    const { directory, name } = rowAddress(key);
    values.push(directory, name, key, value);
  }
  return values;
}

/** A transaction's puts sent together with its log in one statement up to this many log entries; beyond, apart. */
const MAX_COMBINED_ENTRIES = 16;
/**
 * Rows (or log entries) per statement when a transaction's writes go out apart: three or four
 * parameters each, far below the 65,535 parameters a statement takes.
 */
const ROWS_PER_STATEMENT = 2000;

function chunks<T>(items: T[], size: number): T[][] {
  if (items.length <= size) return [items];
  return Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
}

export interface Queued<Item, Result> {
  item: Item;
  resolve(result: Result): void;
  reject(error: unknown): void;
}

/**
 * Requests made in one turn of the microtask queue, sent together: `send` answers each item, in
 * order, with one statement.
 */
class Batch<Item, Result> {
  private queued: Queued<Item, Result>[] = [];

  constructor(private readonly send: (items: Item[]) => Promise<Result[]>) {}

  add(item: Item): Promise<Result> {
    return new Promise((resolve, reject) => {
      if (this.queued.push({ item, resolve, reject }) === 1) queueMicrotask(() => this.flush());
    });
  }

  private flush(): void {
    const queued = this.queued;
    this.queued = [];
    this.send(queued.map((entry) => entry.item)).then(
      (results) => queued.forEach((entry, i) => entry.resolve(results[i])),
      (error: unknown) => queued.forEach((entry) => entry.reject(error)),
    );
  }
}

/**
 * The key/value, log and metadata operations as SQL, over either the pool (each write one
 * statement carrying its log entry) or one transaction's connection. In a transaction each
 * statement is a round trip the transaction's locks are held for, so: puts wait and go out
 * together with the log entries in one statement at commit (`flush`), reads of keys put meanwhile
 * are answered from those puts, and reads (or locks) issued together (`Promise.all`) share one
 * statement.
 */
export class SqlOperations implements PhysicalTransaction {
  private finished = false;
  /** A transaction's writes not yet logged, the last per key (replaying it gives the same state). */
  private readonly unlogged = new Map<string, Buffer | null>();
  /** A transaction's puts not yet sent, by key. */
  private readonly unsent = new Map<string, Buffer>();
  /** Locks this transaction holds: advisory locks are re-entrant, so taking one again is skipped. */
  private readonly locked = new Set<string>();
  private readonly reads = new Batch<RowAddress, Buffer | null>((addresses) => this.readRows(addresses));
  private readonly locks = new Batch<string, void>((keys) => this.lockKeys(keys));

  constructor(
    private readonly statements: StoreStatements,
    private readonly runStatement: RunStatement,
    private readonly inTransaction: boolean,
  ) {}

  async get(key: string): Promise<Buffer | null> {
    const address = rowAddress(key);
    if (!this.inTransaction) {
      const rows = await this.run(this.statements.get, [address.directory, address.name]);
      return rows.length === 0 ? null : asBuffer(rows[0].value);
    }
    if (this.finished) throw new Error(TRANSACTION_FINISHED);
    const unsent = this.unsent.get(key);
    if (unsent !== undefined) return unsent;
    return this.reads.add(address);
  }

  async put(key: string, value: Buffer): Promise<void> {
    const { directory, name } = rowAddress(key);
    if (!this.inTransaction) {
      await this.run(this.statements.putLogged, [directory, name, value, key]);
      return;
    }
    if (this.finished) throw new Error(TRANSACTION_FINISHED);
    this.unsent.delete(key);
    this.unsent.set(key, value);
    this.remember(key, value);
  }

  async delete(key: string): Promise<void> {
    const { directory, name } = rowAddress(key);
    if (!this.inTransaction) {
      await this.run(this.statements.deleteLogged, [directory, name, key]);
      return;
    }
    await this.sendUnsent();
    const removed = await this.run(this.statements.delete, [directory, name]);
    if (removed.length > 0) this.remember(key, null);
  }

  async list(prefix: string): Promise<string[]> {
    await this.sendUnsent();
    const directory = storedDirectory(prefix);
    const rows = await this.run(this.statements.list, [directory, directoryUpperBound(directory)]);
    return rows.map((row) => row.entry as string);
  }

  /** One statement, outside a transaction (see StoreStatements.writeIfUnchanged). */
  async writeIfUnchanged(write: ConditionalWrite): Promise<boolean> {
    const rows = await this.run(this.statements.writeIfUnchanged(shapeOf(write)), conditionalWriteValues(write, []));
    return rows.length === 1;
  }

  /** Several conditional writes in one statement and one transaction, in this order (see StoreStatements.writeBatchIfUnchanged). */
  async writeBatchIfUnchanged(writes: readonly ConditionalWrite[]): Promise<boolean[]> {
    const values: unknown[] = [];
    for (const write of writes) conditionalWriteValues(write, values);
    const rows = await this.run(this.statements.writeBatchIfUnchanged(writes.map(shapeOf)), values);
    return rows[0].written as boolean[];
  }

  /** Held until the transaction ends (pg_advisory_xact_lock); locks asked for together are taken in one statement. */
  async lock(key: string): Promise<void> {
    if (this.locked.has(checkKey(key))) return;
    await this.locks.add(key);
    this.locked.add(key);
  }

  async putMeta(name: string, value: Buffer | null): Promise<void> {
    if (value === null) await this.run(this.statements.deleteMeta, [name]);
    else await this.run(this.statements.putMeta, [name, value]);
  }

  async getMeta(name: string): Promise<Buffer | null> {
    const rows = await this.run(this.statements.getMeta, [name]);
    return rows.length === 0 ? null : asBuffer(rows[0].value);
  }

  async metaWithPrefix(prefix: string): Promise<MetaRecord[]> {
    const rows = await this.run(this.statements.metaWithPrefix, [prefix]);
    return rows.map((row) => ({ name: row.name as string, value: asBuffer(row.value) }));
  }

  async logging(): Promise<boolean> {
    const rows = await this.run(this.statements.logging, []);
    return rows[0].logging as boolean;
  }

  /** Switches logging; switching it on appends a `reset` entry. */
  async setLogging(on: boolean): Promise<void> {
    const changed = await this.run(this.statements.setLogging, [on]);
    if (on && changed.length > 0) await this.appendReset();
  }

  async lastIndex(): Promise<number> {
    const rows = await this.run(this.statements.lastIndex, []);
    return asIndex(rows[0].last_idx);
  }

  async entriesAfter(idx: number, limit: number): Promise<WalEntry[]> {
    const rows = await this.run(this.statements.entriesAfter, [idx, limit]);
    return rows.map(walEntry);
  }

  async trimThrough(idx: number): Promise<void> {
    await this.run(this.statements.trimLog, [idx]);
  }

  /** Another store's log entries, indexes kept, then the head (see WriteAheadLog.importLog); in a transaction. */
  async importLog(entries: readonly WalEntry[], head: LogHead): Promise<void> {
    for (const chunk of chunks([...entries], ROWS_PER_STATEMENT)) {
      if (chunk.length === 0) continue;
      await this.run(this.statements.importLog(chunk.length), chunk.flatMap(({ idx, op, key, value }) => [idx, op, key, value]));
    }
    await this.run(this.statements.setLogHead, [head.lastIndex, head.logging]);
  }

  /** A `reset` entry (when logging is on): the store changed in a way entries do not describe. */
  async appendReset(): Promise<void> {
    await this.run(this.statements.appendReset, []);
  }

  /**
   * Sends the transaction's unsent puts and logs its writes (when logging is on): the last
   * statement before commit, usually one.
   */
  async flush(): Promise<void> {
    if (this.unlogged.size === 0) return;
    const entries: unknown[] = [];
    for (const [key, value] of this.unlogged) entries.push(value === null ? 'delete' : 'put', key, value);
    if (this.unsent.size > 0 && this.unlogged.size <= MAX_COMBINED_ENTRIES) {
      const rows = this.unsent.size;
      await this.run(this.statements.putRowsLogged(rows, this.unlogged.size), [this.unlogged.size, ...this.takeUnsent(), ...entries]);
    } else {
      await this.sendUnsent();
      // Each statement takes the next indexes from the head row, which this transaction holds from the first on.
      for (const chunk of chunks(entries, 3 * ROWS_PER_STATEMENT)) {
        await this.run(this.statements.appendLog(chunk.length / 3), [chunk.length / 3, ...chunk]);
      }
    }
    this.unlogged.clear();
  }

  finish(): void {
    this.finished = true;
  }

  private remember(key: string, value: Buffer | null): void {
    // Re-inserted so the map's order stays the order of the last writes.
    this.unlogged.delete(key);
    this.unlogged.set(key, value);
  }

  /** Sends the puts not yet sent, so that a statement which could see their rows does. */
  private async sendUnsent(): Promise<void> {
    if (this.unsent.size === 0) return;
    for (const chunk of chunks(this.takeUnsent(), 3 * ROWS_PER_STATEMENT)) await this.run(this.statements.putRows(chunk.length / 3), chunk);
  }

  /** The unsent puts as row parameters (directory, name and value of each), no longer unsent. */
  private takeUnsent(): unknown[] {
    const values: unknown[] = [];
    for (const [key, value] of this.unsent) {
      const { directory, name } = rowAddress(key);
      values.push(directory, name, value);
    }
    this.unsent.clear();
    return values;
  }

  private async lockKeys(keys: string[]): Promise<void[]> {
    if (keys.length === 1) await this.run(this.statements.lock, keys);
    else await this.run(this.statements.lockMany, [keys]);
    return keys.map(() => undefined);
  }

  private async readRows(addresses: RowAddress[]): Promise<(Buffer | null)[]> {
    if (addresses.length === 1) {
      const rows = await this.run(this.statements.get, [addresses[0].directory, addresses[0].name]);
      return [rows.length === 0 ? null : asBuffer(rows[0].value)];
    }
    const rows = await this.run(this.statements.getMany, [addresses.map((address) => address.directory), addresses.map((address) => address.name)]);
    // A directory ends in '/' and a name holds none, so the two joined name one row.
    const found = new Map(rows.map((row) => [(row.parent_path as string) + (row.name as string), asBuffer(row.value)]));
    return addresses.map(({ directory, name }) => found.get(directory + name) ?? null);
  }

  private run(statement: Statement, values: unknown[]): Promise<Row[]> {
    if (this.finished) return Promise.reject(new Error(TRANSACTION_FINISHED));
    return this.runStatement(statement, values);
  }
}
