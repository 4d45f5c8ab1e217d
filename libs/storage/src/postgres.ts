import type { Row } from './sql/operations';
import { type PostgresDataSourceOptions, type SqlConnection, SqlPhysical } from './sql/sql-physical';
import type { Statement } from './sql/statements';
import { type TableUse, TableUseLock } from './sql/table-use-lock';

export interface PostgresPhysicalOptions {
  /** postgres://user[:password]@host:port/database */
  connectionUrl: string;
  /** Default `svc_store`. */
  table?: string;
  /** Pool size; default 10. */
  maxConnections?: number;
  /** Default `server`: shares the table with other servers, and refuses it while a migration holds it (see TableUseLock). */
  use?: TableUse;
}

export const DEFAULT_TABLE = 'svc_store';

/** Production backend: PostgreSQL through a pg pool; statements stay prepared per connection. */
export class PostgresPhysical extends SqlPhysical {
  readonly kind = 'postgresql' as const;
  private useLock?: TableUseLock;

  constructor(private readonly options: PostgresPhysicalOptions) {
    super(options.table ?? DEFAULT_TABLE);
  }

  /** Takes the table's use lock before anything else, so a refused open changes nothing (not even the schema). */
  override async open(): Promise<void> {
    const lock = await TableUseLock.take(this.options.connectionUrl, this.options.table ?? DEFAULT_TABLE, this.options.use ?? 'server');
    try {
      await super.open();
    } catch (error) {
      await lock.release().catch(() => undefined);
      throw error;
    }
    this.useLock = lock;
  }

  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      const lock = this.useLock;
      this.useLock = undefined;
      await lock?.release();
    }
  }

  protected connectionOptions(): Partial<PostgresDataSourceOptions> {
    return { url: this.options.connectionUrl, poolSize: this.options.maxConnections ?? 10 };
  }

  protected async runOn(connection: SqlConnection, statement: Statement, values: unknown[]): Promise<Row[]> {
    return (await connection.query({ name: statement.name, text: statement.text, values })).rows;
  }
}
