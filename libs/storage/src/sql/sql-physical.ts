import type { DataSource, DataSourceOptions, MigrationExecutor } from 'typeorm';
import type { ConditionalWrite, Physical, PhysicalTransaction, StoredEntry, StoreSnapshot, WriteAheadLog } from '../types';
import { storeMigrations } from './migrations';
import { rowAddress } from './layout';
import { ConditionalWriteQueue } from './conditional-write-queue';
import { asBuffer, type Row, SqlOperations } from './operations';
import { type IsolationLevel, type Statement, type StoreStatements, storeStatements } from './statements';

/** Rows fetched from the scan's cursor at a time, and rows written per INSERT by replaceAll. */
const SCAN_BATCH_ROWS = 500;
const INSERT_BATCH_ROWS = 200;

export type PostgresDataSourceOptions = Extract<DataSourceOptions, { type: 'postgres' }>;

/** What both the pg pool (and its clients) and typeorm-pglite's pool answer to. */
export interface SqlConnection {
  query(query: string | { name: string; text: string; values: unknown[] }, values?: unknown[]): Promise<{ rows: Row[] }>;
}

/**
 * One SQL code path for PostgreSQL and the embedded store: the same TypeORM data source
 * (postgres dialect), migrations and statements; subclasses choose the driver. Single
 * operations go straight to the driver's pool; transactions hold one connection through a
 * TypeORM query runner.
 */
export abstract class SqlPhysical implements Physical {
  abstract readonly kind: 'postgresql' | 'embedded';
  private connected: { dataSource: DataSource; direct: SqlOperations; conditionalWrites: ConditionalWriteQueue } | undefined;
  private readonly statements: StoreStatements;

  protected constructor(private readonly table: string) {
    this.statements = storeStatements(table, SCAN_BATCH_ROWS);
  }

  /** Driver-specific data source options (connection URL and pool, or the PGlite driver). */
  protected abstract connectionOptions(): Partial<PostgresDataSourceOptions>;

  /** Sends one statement over a connection of this backend's driver. */
  protected abstract runOn(connection: SqlConnection, statement: Statement, values: unknown[]): Promise<Row[]>;

  /** Runs one operation or transaction; a backend with a single connection serialises here. */
  protected exclusive<T>(work: () => Promise<T>): Promise<T> {
    return work();
  }

  async open(): Promise<void> {
    if (this.connected) throw new Error(`${this.kind} storage is already open`);
    // Loaded by the servers that use SQL storage only.
    const { DataSource, MigrationExecutor } = await import('typeorm');
    const dataSource = new DataSource({
      type: 'postgres',
      ...this.connectionOptions(),
      migrations: storeMigrations(this.table),
      migrationsTableName: `${this.table}_migrations`,
      logging: false,
    } as PostgresDataSourceOptions);
    await dataSource.initialize();
    try {
      await this.migrate(dataSource, MigrationExecutor);
    } catch (error) {
      await dataSource.destroy();
      throw error;
    }
    const pool = (dataSource.driver as unknown as { master: SqlConnection }).master;
    const direct = new SqlOperations(this.statements, (statement, values) => this.exclusive(() => this.runOn(pool, statement, values)), false);
    const conditionalWrites = new ConditionalWriteQueue({
      one: (write) => direct.writeIfUnchanged(write),
      many: (writes) => direct.writeBatchIfUnchanged(writes),
    });
    this.connected = { dataSource, direct, conditionalWrites };
  }

  async close(): Promise<void> {
    const connected = this.connected;
    this.connected = undefined;
    await connected?.dataSource.destroy();
  }

  async get(key: string): Promise<Buffer | null> {
    return this.operations().get(key);
  }

  async put(key: string, value: Buffer): Promise<void> {
    return this.operations().put(key, value);
  }

  async delete(key: string): Promise<void> {
    return this.operations().delete(key);
  }

  async list(prefix: string): Promise<string[]> {
    return this.operations().list(prefix);
  }

  async transaction<T>(fn: (tx: PhysicalTransaction) => Promise<T>): Promise<T> {
    return this.inTransaction('READ COMMITTED', fn);
  }

  async writeIfUnchanged(write: ConditionalWrite): Promise<boolean> {
    return this.connection().conditionalWrites.add(write);
  }

  async scan<T>(consume: (entries: AsyncIterable<StoredEntry>) => Promise<T>): Promise<T> {
    return this.snapshot((snapshot) => consume(snapshot.entries));
  }

  /** A cursor inside one repeatable-read transaction: every batch, and the log and metadata, from the same point in time. */
  async snapshot<T>(consume: (snapshot: StoreSnapshot) => Promise<T>): Promise<T> {
    return this.inTransaction('REPEATABLE READ', async (tx, connection) => {
      // The first statement fixes the transaction's point in time.
      const lastIndex = await tx.lastIndex();
      await this.runOn(connection, this.statements.scanCursor, []);
      const fetchBatch = () => this.runOn(connection, this.statements.scanFetch, []);
      async function* entries(): AsyncGenerator<StoredEntry> {
        for (let rows = await fetchBatch(); rows.length > 0; rows = await fetchBatch()) {
          for (const row of rows) yield { key: (row.parent_path as string).slice(1) + (row.name as string), value: asBuffer(row.value) };
        }
      }
      return consume({
        entries: entries(),
        lastIndex,
        meta: (prefix) => tx.metaWithPrefix(prefix),
        entriesAfter: (idx, limit) => tx.entriesAfter(idx, limit),
      });
    });
  }

  readonly log: WriteAheadLog = {
    setLogging: (on) => this.inTransaction('READ COMMITTED', (tx) => tx.setLogging(on)),
    logging: () => this.operations().logging(),
    lastIndex: () => this.operations().lastIndex(),
    entriesAfter: (idx, limit) => this.operations().entriesAfter(idx, limit),
    trimThrough: (idx) => this.operations().trimThrough(idx),
    getMeta: (name) => this.operations().getMeta(name),
    importLog: (entries, head) => this.inTransaction('READ COMMITTED', (tx) => tx.importLog(entries, head)),
  };

  async replaceAll(entries: AsyncIterable<StoredEntry>, keep: ReadonlySet<string>): Promise<void> {
    await this.inTransaction('READ COMMITTED', async (tx, connection) => {
      const kept: StoredEntry[] = [];
      for (const key of keep) {
        const value = await tx.get(key);
        if (value) kept.push({ key, value });
      }
      await this.runOn(connection, this.statements.deleteAll, []);
      let batch = kept;
      for await (const entry of entries) {
        if (keep.has(entry.key)) continue;
        batch.push(entry);
        if (batch.length >= INSERT_BATCH_ROWS) {
          await this.runOn(connection, this.statements.insertRows(batch.length), insertValues(batch));
          batch = [];
        }
      }
      if (batch.length > 0) await this.runOn(connection, this.statements.insertRows(batch.length), insertValues(batch));
      await tx.appendReset();
    });
  }

  /**
   * Runs `work` on one connection inside a transaction, committed (after `tx.flush`) when it
   * returns, rolled back when it throws; `tx` (the operations on that connection) is finished
   * either way. The transaction is opened and ended with our own statements, one round trip each.
   */
  private inTransaction<T>(isolation: IsolationLevel, work: (tx: SqlOperations, connection: SqlConnection) => Promise<T>): Promise<T> {
    const { dataSource } = this.connection();
    return this.exclusive(async () => {
      const runner = dataSource.createQueryRunner();
      try {
        const connection = (await runner.connect()) as SqlConnection;
        const run = (statement: Statement, values: unknown[] = []) => this.runOn(connection, statement, values);
        await run(this.statements.begin(isolation));
        const tx = new SqlOperations(this.statements, run, true);
        try {
          const result = await work(tx, connection);
          await tx.flush();
          tx.finish();
          await run(this.statements.commit);
          return result;
        } catch (error) {
          tx.finish();
          // The caller's error is the one to report; a failed rollback means the connection is
          // gone, and the server aborts the transaction then anyway.
          await run(this.statements.rollback).catch(() => undefined);
          throw error;
        }
      } finally {
        await runner.release();
      }
    });
  }

  /** Replicas may start together: a session advisory lock lets one of them migrate at a time. */
  private async migrate(dataSource: DataSource, Executor: typeof MigrationExecutor): Promise<void> {
    const runner = dataSource.createQueryRunner();
    const lockKey = [`svc-storage-migrate ${this.table}`];
    try {
      await runner.query('SELECT pg_advisory_lock(hashtextextended($1::text, 0))', lockKey);
      try {
        await new Executor(dataSource, runner).executePendingMigrations();
      } finally {
        await runner.query('SELECT pg_advisory_unlock(hashtextextended($1::text, 0))', lockKey);
      }
    } finally {
      await runner.release();
    }
  }

  private connection(): NonNullable<SqlPhysical['connected']> {
    if (!this.connected) throw new Error(`${this.kind} storage is not open`);
    return this.connected;
  }

  private operations(): SqlOperations {
    return this.connection().direct;
  }
}

/** The parameters of `insertRows(entries.length)`: directory, name and value of each entry in turn. */
function insertValues(entries: readonly StoredEntry[]): unknown[] {
  return entries.flatMap(({ key, value }) => {
    const { directory, name } = rowAddress(key);
    return [directory, name, value];
  });
}
