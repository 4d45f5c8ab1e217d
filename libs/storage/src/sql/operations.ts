import { checkKey } from '../keys';
import { TRANSACTION_FINISHED, type MetaRecord, type PhysicalTransaction, type WalEntry } from '../types';
import { directoryUpperBound, rowAddress, storedDirectory } from './layout';
import type { Statement, StoreStatements } from './statements';

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

/**
 * The key/value, log and metadata operations as SQL, over either the pool (each write one
 * statement carrying its log entry) or one transaction's connection (writes collected and logged
 * together by `appendLog` just before commit).
 */
export class SqlOperations implements PhysicalTransaction {
  private finished = false;
  /** A transaction's writes not yet logged, the last per key (replaying it gives the same state). */
  private readonly unlogged = new Map<string, Buffer | null>();

  constructor(
    private readonly statements: StoreStatements,
    private readonly runStatement: RunStatement,
    private readonly inTransaction: boolean,
  ) {}

  async get(key: string): Promise<Buffer | null> {
    const { directory, name } = rowAddress(key);
    const rows = await this.run(this.statements.get, [directory, name]);
    return rows.length === 0 ? null : asBuffer(rows[0].value);
  }

  async put(key: string, value: Buffer): Promise<void> {
    const { directory, name } = rowAddress(key);
    if (!this.inTransaction) {
      await this.run(this.statements.putLogged, [directory, name, value, key]);
      return;
    }
    await this.run(this.statements.put, [directory, name, value]);
    this.remember(key, value);
  }

  async delete(key: string): Promise<void> {
    const { directory, name } = rowAddress(key);
    if (!this.inTransaction) {
      await this.run(this.statements.deleteLogged, [directory, name, key]);
      return;
    }
    const removed = await this.run(this.statements.delete, [directory, name]);
    if (removed.length > 0) this.remember(key, null);
  }

  async list(prefix: string): Promise<string[]> {
    const directory = storedDirectory(prefix);
    const rows = await this.run(this.statements.list, [directory, directoryUpperBound(directory)]);
    return rows.map((row) => row.entry as string);
  }

  /** Held until the transaction ends (pg_advisory_xact_lock). */
  async lock(key: string): Promise<void> {
    await this.run(this.statements.lock, [checkKey(key)]);
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

  /** A `reset` entry (when logging is on): the store changed in a way entries do not describe. */
  async appendReset(): Promise<void> {
    await this.run(this.statements.appendReset, []);
  }

  /** Logs the transaction's writes (when logging is on); the last statement before commit. */
  async appendLog(): Promise<void> {
    if (this.unlogged.size === 0) return;
    const values: unknown[] = [this.unlogged.size];
    for (const [key, value] of this.unlogged) values.push(value === null ? 'delete' : 'put', key, value);
    await this.run(this.statements.appendLog(this.unlogged.size), values);
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

  private run(statement: Statement, values: unknown[]): Promise<Row[]> {
    if (this.finished) return Promise.reject(new Error(TRANSACTION_FINISHED));
    return this.runStatement(statement, values);
  }
}
