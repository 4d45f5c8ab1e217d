import { chmodSync, mkdirSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Mutex } from 'async-mutex';
import { PGliteDriver } from 'typeorm-pglite';
import type { Row } from './sql/operations';
import { type PostgresDataSourceOptions, type SqlConnection, SqlPhysical } from './sql/sql-physical';
import type { Statement } from './sql/statements';
import { DEFAULT_TABLE } from './postgres';
import { DirectoryLock } from './directory-lock';
import { PrivateNodeFS } from './private-node-fs';

export interface EmbeddedPhysicalOptions {
  /** Data directory; created if missing, private to the server's user, used by one server at a time. */
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
  private lock?: DirectoryLock;

  constructor(options: EmbeddedPhysicalOptions) {
    super(DEFAULT_TABLE);
    this.directory = resolve(options.path);
  }

  override async open(): Promise<void> {
    if (openDirectory !== undefined) {
      throw new Error(`embedded storage: ${openDirectory} is already open in this process; close it first`);
    }
    mkdirSync(this.directory, { recursive: true, mode: 0o700 });
    this.lock = DirectoryLock.acquire(this.directory);
    this.claimProcessInstance(true);
    try {
      makePrivate(this.directory);
      await super.open();
    } catch (error) {
      this.claimProcessInstance(false);
      this.releaseLock();
      throw error;
    }
  }

  override async close(): Promise<void> {
    await this.exclusive(() => super.close());
    if (this.holdsProcessInstance) this.claimProcessInstance(false);
    this.releaseLock();
  }

  private releaseLock(): void {
    this.lock?.release();
    this.lock = undefined;
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
    return { driver: new PGliteDriver({ fs: new PrivateNodeFS(this.directory) }).driver };
  }

  protected async runOn(connection: SqlConnection, statement: Statement, values: unknown[]): Promise<Row[]> {
    return (await connection.query(statement.text, values)).rows;
  }
}

/** Owner-only modes for the directory and everything in it (data written by earlier versions was not). */
function makePrivate(directory: string): void {
  chmodSync(directory, 0o700);
  for (const entry of readdirSync(directory, { withFileTypes: true, recursive: true })) {
    if (entry.isDirectory()) chmodSync(join(entry.parentPath, entry.name), 0o700);
    else if (entry.isFile()) chmodSync(join(entry.parentPath, entry.name), 0o600);
  }
}
