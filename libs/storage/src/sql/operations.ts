import { checkKey } from '../keys';
import { TRANSACTION_FINISHED, type Transaction } from '../types';
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

/** The key/value operations as SQL, over either the pool or one transaction's connection. */
export class SqlOperations implements Transaction {
  private finished = false;

  constructor(
    private readonly statements: StoreStatements,
    private readonly runStatement: RunStatement,
  ) {}

  async get(key: string): Promise<Buffer | null> {
    const { directory, name } = rowAddress(key);
    const rows = await this.run(this.statements.get, [directory, name]);
    return rows.length === 0 ? null : asBuffer(rows[0].value);
  }

  async put(key: string, value: Buffer): Promise<void> {
    const { directory, name } = rowAddress(key);
    await this.run(this.statements.put, [directory, name, value]);
  }

  async delete(key: string): Promise<void> {
    const { directory, name } = rowAddress(key);
    await this.run(this.statements.delete, [directory, name]);
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

  finish(): void {
    this.finished = true;
  }

  private run(statement: Statement, values: unknown[]): Promise<Row[]> {
    if (this.finished) return Promise.reject(new Error(TRANSACTION_FINISHED));
    return this.runStatement(statement, values);
  }
}
