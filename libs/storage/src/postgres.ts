import type { Row } from './sql/operations';
import { type PostgresDataSourceOptions, type SqlConnection, SqlPhysical } from './sql/sql-physical';
import type { Statement } from './sql/statements';

export interface PostgresPhysicalOptions {
  /** postgres://user[:password]@host:port/database */
  connectionUrl: string;
  /** Default `svc_store`. */
  table?: string;
  /** Pool size; default 10. */
  maxConnections?: number;
}

export const DEFAULT_TABLE = 'svc_store';

/** Production backend: PostgreSQL through a pg pool; statements stay prepared per connection. */
export class PostgresPhysical extends SqlPhysical {
  readonly kind = 'postgresql' as const;

  constructor(private readonly options: PostgresPhysicalOptions) {
    super(options.table ?? DEFAULT_TABLE);
  }

  protected connectionOptions(): Partial<PostgresDataSourceOptions> {
    return { url: this.options.connectionUrl, poolSize: this.options.maxConnections ?? 10 };
  }

  protected async runOn(connection: SqlConnection, statement: Statement, values: unknown[]): Promise<Row[]> {
    return (await connection.query({ name: statement.name, text: statement.text, values })).rows;
  }
}
