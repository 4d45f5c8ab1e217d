import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { Mutex } from 'async-mutex';
import { PGliteDriver } from 'typeorm-pglite';
import type { Row } from './sql/operations';
import { type PostgresDataSourceOptions, type SqlConnection, SqlPhysical } from './sql/sql-physical';
import type { Statement } from './sql/statements';
import { DEFAULT_TABLE } from './postgres';

export interface EmbeddedPhysicalOptions {
  /** Data directory; created if missing. */
  path: string;
}

/** typeorm-pglite keeps one PGlite instance per process, so one embedded store may be open. */
let openDirectory: string | undefined;

/**
 * Durable storage without a server: PostgreSQL compiled to WebAssembly (PGlite) in a data
 * directory, driven through typeorm-pglite by the same data source, migrations and SQL as the
 * PostgreSQL backend. PGlite has a single session, so every operation and transaction runs one
 * at a time; inside `transaction(fn)` use only the transaction handle, or `fn` waits on itself.
 */
export class EmbeddedPhysical extends SqlPhysical {
  readonly kind = 'embedded' as const;
  private readonly directory: string;
  private readonly session = new Mutex();
  private holdsProcessInstance = false;

  constructor(options: EmbeddedPhysicalOptions) {
    super(DEFAULT_TABLE);
    this.directory = resolve(options.path);
  }

  override async open(): Promise<void> {
    if (openDirectory !== undefined) {
      throw new Error(`embedded storage: ${openDirectory} is already open in this process; close it first`);
    }
    mkdirSync(this.directory, { recursive: true });
    this.claimProcessInstance(true);
    try {
      await super.open();
    } catch (error) {
      this.claimProcessInstance(false);
      throw error;
    }
  }

  override async close(): Promise<void> {
    await this.exclusive(() => super.close());
    if (this.holdsProcessInstance) this.claimProcessInstance(false);
  }

  private claimProcessInstance(claim: boolean): void {
    openDirectory = claim ? this.directory : undefined;
    this.holdsProcessInstance = claim;
  }

  protected override exclusive<T>(work: () => Promise<T>): Promise<T> {
    return this.session.runExclusive(work);
  }

  protected connectionOptions(): Partial<PostgresDataSourceOptions> {
    // Constructing the driver is what points typeorm-pglite's shared instance at this directory.
    return { driver: new PGliteDriver({ dataDir: this.directory }).driver };
  }

  protected async runOn(connection: SqlConnection, statement: Statement, values: unknown[]): Promise<Row[]> {
    return (await connection.query(statement.text, values)).rows;
  }
}
