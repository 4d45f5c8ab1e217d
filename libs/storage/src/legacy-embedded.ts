import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { Mutex } from 'async-mutex';
import { types } from '@electric-sql/pglite';
import { PGliteDriver } from 'typeorm-pglite';
import type { Row } from './sql/operations';
import { type PostgresDataSourceOptions, type SqlConnection, SqlPhysical } from './sql/sql-physical';
import type { Statement } from './sql/statements';
import { DEFAULT_TABLE } from './postgres';
import { DirectoryLock, makePrivate } from './directory-lock';
import { PrivateNodeFS } from './private-node-fs';

export interface LegacyEmbeddedPhysicalOptions {
  /** Data directory of the earlier embedded format. */
  path: string;
}

/**
 * PGlite's own bytea converters work a byte at a time in JavaScript (hex text, then its UTF-8
 * length, char by char): a 31 MiB value held the event loop for 15 s (profiled). Handed the
 * bytes themselves, PGlite binds them as a binary parameter, copied once; results arrive as hex
 * text, which Node's native codec decodes.
 */
const BYTEA_SERIALIZERS = { [types.BYTEA]: ((value: Uint8Array) => value) as unknown as (value: unknown) => string };
const BYTEA_PARSERS = { [types.BYTEA]: (text: string) => Buffer.from(text.slice(2), 'hex') };

/** typeorm-pglite keeps one PGlite instance per process, so one embedded store may be open. */
let openDirectory: string | undefined;

/**
 * The embedded store of earlier versions, kept to move its data directories to the current one
 * (`svc operator migrate`): PostgreSQL compiled to WebAssembly (PGlite) in a data directory, driven
 * through typeorm-pglite by the same data source, migrations and SQL as the PostgreSQL backend. PGlite has a single session, so every operation and transaction runs one
 * at a time; inside `transaction(fn)` use only the transaction handle, or `fn` waits on itself.
 */
export class LegacyEmbeddedPhysical extends SqlPhysical {
  readonly kind = 'embedded' as const;
  private readonly directory: string;
  private readonly session = new Mutex();
  private holdsProcessInstance = false;
  private lock?: DirectoryLock;

  constructor(options: LegacyEmbeddedPhysicalOptions) {
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
    return { driver: new PGliteDriver({ fs: new PrivateNodeFS(this.directory), serializers: BYTEA_SERIALIZERS, parsers: BYTEA_PARSERS }).driver };
  }

  protected async runOn(connection: SqlConnection, statement: Statement, values: unknown[]): Promise<Row[]> {
    // PGlite runs PostgreSQL synchronously on this thread and settles its promises as microtasks,
    // so a request's storage work would run to its end without another socket being read. Around
    // a statement that moves a large value (hundreds of milliseconds of work), the event loop gets
    // to poll first; small statements, almost all of them, go straight on.
    const writesLarge = values.some(isLargeValue);
    if (writesLarge) await pollOtherSockets();
    const { rows } = await connection.query(statement.text, values);
    if (writesLarge || (rows.length > 0 && isLargeValue(rows[0].value))) await pollOtherSockets();
    return rows;
  }
}


/** Values from this size on are moved between turns of the event loop (see runOn). */
const LARGE_VALUE_BYTES = 1024 * 1024;

function isLargeValue(value: unknown): boolean {
  return value instanceof Uint8Array && value.length >= LARGE_VALUE_BYTES;
}

/**
 * Resolves after the event loop has polled for I/O: an immediate queued from the check phase
 * runs in the next loop iteration, after its poll phase, which one queued from I/O may not.
 */
function pollOtherSockets(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}
