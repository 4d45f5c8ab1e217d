/** One SQL statement; `name` lets PostgreSQL keep it prepared per connection. */
export interface Statement {
  name: string;
  text: string;
}

export interface StoreStatements {
  get: Statement;
  put: Statement;
  delete: Statement;
  list: Statement;
  lock: Statement;
  /** Opens the cursor `svc_scan` over every row (inside a transaction); `scanFetch` reads its next batch. */
  scanCursor: Statement;
  scanFetch: Statement;
  deleteAll: Statement;
  /** Inserts `rows` rows: $1-$3 the first row's directory, name and value, $4-$6 the second's, ... */
  insertRows(rows: number): Statement;
}

const SAFE_TABLE_NAME = /^[a-z_][a-z0-9_]{0,47}$/;

export function quoteTable(table: string): string {
  if (!SAFE_TABLE_NAME.test(table)) {
    throw new Error(
      `storage table ${JSON.stringify(table)} is not a safe identifier: use 1-48 lowercase letters, digits ` +
        'and underscores, not starting with a digit',
    );
  }
  return `"${table}"`;
}

/**
 * The statements every SQL backend runs, for one table (see layout.ts for the row layout).
 * `list` returns the directory's own rows plus its sub-directories, found by a skip scan: each
 * step seeks the first deeper path after the previous sub-directory's range, so the cost grows
 * with the number of children, not with the number of keys below them.
 * $1 stored directory, $2 its upper bound.
 */
export function storeStatements(table: string, scanBatchRows: number): StoreStatements {
  const t = quoteTable(table);
  const nextSegment = `split_part(substr(parent_path, length($1::text) + 1), '/', 1)`;
  return {
    get: { name: 'svc_storage_get', text: `SELECT value FROM ${t} WHERE parent_path = $1 AND name = $2` },
    put: {
      name: 'svc_storage_put',
      text:
        `INSERT INTO ${t} (parent_path, name, value) VALUES ($1, $2, $3) ` +
        'ON CONFLICT (parent_path, name) DO UPDATE SET value = EXCLUDED.value',
    },
    delete: { name: 'svc_storage_delete', text: `DELETE FROM ${t} WHERE parent_path = $1 AND name = $2` },
    list: {
      name: 'svc_storage_list',
      text: `WITH RECURSIVE subdirectory(segment) AS (
          SELECT (SELECT ${nextSegment} FROM ${t}
                  WHERE parent_path > $1::text AND parent_path < $2::text
                  ORDER BY parent_path LIMIT 1)
          UNION ALL
          SELECT (SELECT ${nextSegment} FROM ${t}
                  WHERE parent_path >= $1::text || subdirectory.segment || '0' AND parent_path < $2::text
                  ORDER BY parent_path LIMIT 1)
          FROM subdirectory WHERE subdirectory.segment IS NOT NULL
        )
        SELECT entry FROM (
          SELECT name AS entry FROM ${t} WHERE parent_path = $1::text
          UNION ALL
          SELECT segment || '/' FROM subdirectory WHERE segment IS NOT NULL
        ) AS children ORDER BY entry COLLATE "C"`,
    },
    // Namespaced by table so stores sharing a database do not contend on each other's keys.
    lock: { name: 'svc_storage_lock', text: `SELECT pg_advisory_xact_lock(hashtextextended('${table}:' || $1::text, 0))` },
    // Unnamed: a cursor lives only in its transaction, and the batch statements vary in length.
    scanCursor: { name: '', text: `DECLARE svc_scan NO SCROLL CURSOR FOR SELECT parent_path, name, value FROM ${t} ORDER BY parent_path, name` },
    scanFetch: { name: '', text: `FETCH ${scanBatchRows} FROM svc_scan` },
    deleteAll: { name: '', text: `DELETE FROM ${t}` },
    insertRows: (rows) => ({
      name: '',
      text: `INSERT INTO ${t} (parent_path, name, value) VALUES ${Array.from({ length: rows }, (_, i) => `($${3 * i + 1}, $${3 * i + 2}, $${3 * i + 3})`).join(', ')}`,
    }),
  };
}
