/** One SQL statement; `name` lets PostgreSQL keep it prepared per connection. */
export interface Statement {
  name: string;
  text: string;
}

export type IsolationLevel = 'READ COMMITTED' | 'REPEATABLE READ';

export interface StoreStatements {
  /** Opens a transaction at `isolation` in one statement (TypeORM's query runner takes two). */
  begin(isolation: IsolationLevel): Statement;
  commit: Statement;
  rollback: Statement;
  get: Statement;
  /** The rows of several keys: $1 their stored directories, $2 their names (arrays, pairwise). */
  getMany: Statement;
  put: Statement;
  delete: Statement;
  list: Statement;
  lock: Statement;
  /** Takes the locks of several keys ($1, an array) in their order. */
  lockMany: Statement;
  /** Opens the cursor `svc_scan` over every row (inside a transaction); `scanFetch` reads its next batch. */
  scanCursor: Statement;
  scanFetch: Statement;
  deleteAll: Statement;
  /** Inserts `rows` rows: $1-$3 the first row's directory, name and value, $4-$6 the second's, ... */
  insertRows(rows: number): Statement;
  /** Like `insertRows`, replacing rows that exist. */
  putRows(rows: number): Statement;
  /** Single writes outside a transaction, with their log entry in the same statement ($4/$3: the key). */
  putLogged: Statement;
  deleteLogged: Statement;
  /** Appends `entries` log entries at commit ($1 the count, then op, key and value of each in turn). */
  appendLog(entries: number): Statement;
  /**
   * Writes `rows` rows and appends `entries` log entries in one statement at commit: $1 the entry
   * count, then directory, name and value of each row, then op, key and value of each entry.
   */
  putRowsLogged(rows: number, entries: number): Statement;
  appendReset: Statement;
  /** Inserts `entries` log entries as they are: idx, op, key and value of each in turn. */
  importLog(entries: number): Statement;
  /** Sets the log's head: $1 the last index, $2 whether logging is on. */
  setLogHead: Statement;
  /**
   * A conditional write (ConditionalWrite) of `shape.locks` locked keys, `shape.checks` compared
   * keys and `shape.writes` written ones, in one statement, one parameter per value in this order: the keys to
   * lock; the directory, name and expected value (null: absent) of each compared key; the
   * directory, name, key and value (null deletes) of each written key. Answers one row (of no
   * columns) when it wrote, none when a compared value had changed.
   */
  writeIfUnchanged(shape: ConditionalWriteShape): Statement;
  /**
   * Conditional writes of these shapes in one statement (and one transaction), their parameters
   * one after the other as writeIfUnchanged takes them. Answers one row whose `written` column
   * says, per write, whether it wrote.
   */
  writeBatchIfUnchanged(shapes: readonly ConditionalWriteShape[]): Statement;
  setLogging: Statement;
  logging: Statement;
  lastIndex: Statement;
  entriesAfter: Statement;
  trimLog: Statement;
  getMeta: Statement;
  metaWithPrefix: Statement;
  putMeta: Statement;
  deleteMeta: Statement;
}

/** How many keys a conditional write locks, compares and writes: what its statement's text depends on. */
export interface ConditionalWriteShape {
  locks: number;
  checks: number;
  writes: number;
}

const CONDITIONAL_WRITE_ARRAY_TYPES = ['text', 'text', 'text', 'bytea', 'text', 'text', 'bytea', 'text'] as const;

/**
 * The arrays the conditional write functions take (lock keys; compared directories, names and
 * values; written directories, names, values and keys) for members of these shapes, one
 * parameter per value in the order StoreStatements.writeIfUnchanged gives, member after member:
 * put into arrays by the server because the embedded store's driver cannot send an array of
 * bytea, and pg escapes a text array element by element.
 */
function conditionalWriteArrays(shapes: readonly ConditionalWriteShape[]): string[] {
  const arrays: string[][] = CONDITIONAL_WRITE_ARRAY_TYPES.map(() => []);
  let next = 1;
  const parameter = (array: number) => arrays[array].push(`$${next++}::${CONDITIONAL_WRITE_ARRAY_TYPES[array]}`);
  for (const { locks, checks, writes } of shapes) {
    for (let i = 0; i < locks; i++) parameter(0);
    for (let i = 0; i < checks; i++) [1, 2, 3].forEach(parameter);
    // Directory, name, key, value: the key goes to the last array, the value to the one before.
    for (let i = 0; i < writes; i++) [4, 5, 7, 6].forEach(parameter);
  }
  return arrays.map((items, i) => `ARRAY[${items.join(', ')}]::${CONDITIONAL_WRITE_ARRAY_TYPES[i]}[]`);
}

/** The parameters a conditional write of this shape sends: its keys to lock, three per compared key, four per written key. */
export function conditionalWriteParameters({ locks, checks, writes }: ConditionalWriteShape): number {
  return locks + 3 * checks + 4 * writes;
}

/** Where each member's part of an array ends (1-based, inclusive), as an int[] literal. */
function memberEnds(shapes: readonly ConditionalWriteShape[], count: (shape: ConditionalWriteShape) => number): string {
  let end = 0;
  return `ARRAY[${shapes.map((shape) => (end += count(shape))).join(', ')}]::int[]`;
}

function shapeName({ locks, checks, writes }: ConditionalWriteShape): string {
  return `${locks}_${checks}_${writes}`;
}

/** Statements kept prepared for conditional write batches, per table; rarer shapes are sent unnamed. */
const MAX_NAMED_BATCH_SHAPES = 64;

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

/** Every table of a store: the data, its migrations and the replication tables. */
export function storeTables(table: string): string[] {
  quoteTable(table);
  return [table, `${table}_migrations`, `${table}_wal`, `${table}_wal_head`, `${table}_meta`];
}

/**
 * The tables beside a store table: its write-ahead log, the log's head (one row: the last index
 * handed out and whether logging is on) and the replication metadata. A suffix keeps every name
 * within PostgreSQL's 63 characters.
 */
export function replicationTables(table: string): { wal: string; head: string; meta: string } {
  const [, , wal, head, meta] = storeTables(table).map((name) => `"${name}"`);
  return { wal, head, meta };
}

/** The function a conditional write calls (a migration creates it), quoted: its name is the table's with a suffix. */
export function conditionalWriteFunction(table: string): string {
  quoteTable(table);
  return `"${table}_write_if_unchanged"`;
}

/** The function several conditional writes call together (a migration creates it), quoted. */
export function conditionalWriteBatchFunction(table: string): string {
  quoteTable(table);
  return `"${table}_write_batch"`;
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
  const { wal, head, meta } = replicationTables(table);
  // The head row is locked last, after the data rows, and held until commit: log indexes follow
  // commit order, and no two writers wait on each other in opposite orders. With logging off the
  // UPDATE matches no row and locks nothing, so writers do not queue on it.
  const nextIndexes = (count: string, written: string) =>
    `UPDATE ${head} SET last_idx = last_idx + ${count} WHERE logging${written} RETURNING last_idx`;
  const logEntries = (entries: number, first: number) =>
    `(VALUES ${Array.from({ length: entries }, (_, i) => `(${i + 1}, $${first + 3 * i}::text, $${first + 3 * i + 1}::text, $${first + 3 * i + 2}::bytea)`).join(', ')}) AS e(ord, op, key, value)`;
  const rowValues = (rows: number, first: number) =>
    Array.from({ length: rows }, (_, i) => `($${first + 3 * i}, $${first + 3 * i + 1}, $${first + 3 * i + 2})`).join(', ');
  const upsert = 'ON CONFLICT (parent_path, name) DO UPDATE SET value = EXCLUDED.value';
  const nextSegment = `split_part(substr(parent_path, length($1::text) + 1), '/', 1)`;
  const conditionalWrites = new Map<string, Statement>();
  const conditionalWriteBatches = new Map<string, Statement>();
  return {
    begin: (isolation) => ({ name: '', text: `BEGIN ISOLATION LEVEL ${isolation}` }),
    commit: { name: '', text: 'COMMIT' },
    rollback: { name: '', text: 'ROLLBACK' },
    get: { name: 'svc_storage_get', text: `SELECT value FROM ${t} WHERE parent_path = $1 AND name = $2` },
    getMany: {
      name: 'svc_storage_get_many',
      text:
        `SELECT ${t}.parent_path, ${t}.name, value FROM ${t} ` +
        `JOIN unnest($1::text[], $2::text[]) AS wanted(parent_path, name) USING (parent_path, name)`,
    },
    put: { name: 'svc_storage_put', text: `INSERT INTO ${t} (parent_path, name, value) VALUES ($1, $2, $3) ${upsert}` },
    delete: { name: 'svc_storage_delete', text: `DELETE FROM ${t} WHERE parent_path = $1 AND name = $2 RETURNING 1` },
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
    lockMany: {
      name: 'svc_storage_lock_many',
      text: `SELECT pg_advisory_xact_lock(hashtextextended('${table}:' || key, 0)) FROM unnest($1::text[]) WITH ORDINALITY AS k(key, ord) ORDER BY ord`,
    },
    // Unnamed: a cursor lives only in its transaction, and the batch statements vary in length.
    scanCursor: { name: '', text: `DECLARE svc_scan NO SCROLL CURSOR FOR SELECT parent_path, name, value FROM ${t} ORDER BY parent_path, name` },
    scanFetch: { name: '', text: `FETCH ${scanBatchRows} FROM svc_scan` },
    deleteAll: { name: '', text: `DELETE FROM ${t}` },
    insertRows: (rows) => ({ name: '', text: `INSERT INTO ${t} (parent_path, name, value) VALUES ${rowValues(rows, 1)}` }),
    putRows: (rows) => ({ name: '', text: `INSERT INTO ${t} (parent_path, name, value) VALUES ${rowValues(rows, 1)} ${upsert}` }),
    // Referencing the data CTE makes it run (and lock its row) before the head row is locked.
    putLogged: {
      name: 'svc_storage_put_logged',
      text:
        `WITH written AS (INSERT INTO ${t} (parent_path, name, value) VALUES ($1, $2, $3) ${upsert} RETURNING 1), ` +
        `head AS (${nextIndexes('1', ' AND EXISTS (SELECT 1 FROM written)')}) ` +
        `INSERT INTO ${wal} (idx, op, key, value) SELECT last_idx, 'put', $4, $3 FROM head`,
    },
    deleteLogged: {
      name: 'svc_storage_delete_logged',
      text:
        `WITH removed AS (DELETE FROM ${t} WHERE parent_path = $1 AND name = $2 RETURNING 1), ` +
        `head AS (${nextIndexes('1', ' AND EXISTS (SELECT 1 FROM removed)')}) ` +
        `INSERT INTO ${wal} (idx, op, key, value) SELECT last_idx, 'delete', $3, NULL FROM head`,
    },
    appendLog: (entries) => ({
      name: '',
      text:
        `WITH head AS (${nextIndexes('$1::bigint', '')}) ` +
        `INSERT INTO ${wal} (idx, op, key, value) SELECT head.last_idx - $1::bigint + e.ord, e.op, e.key, e.value FROM head, ${logEntries(entries, 2)}`,
    }),
    // Named per shape (callers keep the shapes few and small), so each is parsed once per connection.
    putRowsLogged: (rows, entries) => ({
      name: `svc_storage_put_rows_logged_${rows}_${entries}`,
      text:
        `WITH written AS (INSERT INTO ${t} (parent_path, name, value) VALUES ${rowValues(rows, 2)} ` +
        `${upsert} RETURNING 1), ` +
        `head AS (${nextIndexes('$1::bigint', ' AND EXISTS (SELECT 1 FROM written)')}) ` +
        `INSERT INTO ${wal} (idx, op, key, value) SELECT head.last_idx - $1::bigint + e.ord, e.op, e.key, e.value FROM head, ${logEntries(entries, 2 + 3 * rows)}`,
    }),
    appendReset: {
      name: 'svc_storage_log_reset',
      text: `WITH head AS (${nextIndexes('1', '')}) INSERT INTO ${wal} (idx, op, key, value) SELECT last_idx, 'reset', '', NULL FROM head`,
    },
    importLog: (entries) => ({
      name: '',
      text: `INSERT INTO ${wal} (idx, op, key, value) VALUES ${Array.from({ length: entries }, (_, i) => `($${4 * i + 1}::bigint, $${4 * i + 2}::text, $${4 * i + 3}::text, $${4 * i + 4}::bytea)`).join(', ')}`,
    }),
    setLogHead: { name: 'svc_storage_set_log_head', text: `UPDATE ${head} SET last_idx = $1, logging = $2` },
    writeIfUnchanged: (shape) => {
      const key = shapeName(shape);
      let statement = conditionalWrites.get(key);
      if (!statement) {
        // No column: node-postgres then has no field to describe or value to parse, which was a
        // large share of its work for this statement; whether a row came back says whether it wrote.
        statement = { name: `svc_storage_write_if_unchanged_${key}`, text: `SELECT WHERE ${conditionalWriteFunction(table)}(${conditionalWriteArrays([shape]).join(', ')})` };
        conditionalWrites.set(key, statement);
      }
      return statement;
    },
    writeBatchIfUnchanged: (shapes) => {
      const key = shapes.map(shapeName).join('-');
      const known = conditionalWriteBatches.get(key);
      if (known) return known;
      const [locked, checkDirs, checkNames, expected, writeDirs, writeNames, writeValues, writeKeys] = conditionalWriteArrays(shapes);
      const ends = (count: (shape: ConditionalWriteShape) => number) => memberEnds(shapes, count);
      const text =
        `SELECT ${conditionalWriteBatchFunction(table)}(${ends((shape) => shape.locks)}, ${locked}, ` +
        `${ends((shape) => shape.checks)}, ${checkDirs}, ${checkNames}, ${expected}, ` +
        `${ends((shape) => shape.writes)}, ${writeDirs}, ${writeNames}, ${writeValues}, ${writeKeys}) AS written`;
      if (conditionalWriteBatches.size >= MAX_NAMED_BATCH_SHAPES) return { name: '', text };
      const statement = { name: `svc_storage_write_batch_${conditionalWriteBatches.size}`, text };
      conditionalWriteBatches.set(key, statement);
      return statement;
    },
    setLogging: { name: 'svc_storage_set_logging', text: `UPDATE ${head} SET logging = $1 WHERE logging <> $1 RETURNING logging` },
    logging: { name: 'svc_storage_logging', text: `SELECT logging FROM ${head}` },
    lastIndex: { name: 'svc_storage_last_index', text: `SELECT last_idx FROM ${head}` },
    entriesAfter: { name: 'svc_storage_entries_after', text: `SELECT idx, op, key, value FROM ${wal} WHERE idx > $1 ORDER BY idx LIMIT $2` },
    trimLog: { name: 'svc_storage_trim_log', text: `DELETE FROM ${wal} WHERE idx <= $1` },
    getMeta: { name: 'svc_storage_get_meta', text: `SELECT value FROM ${meta} WHERE name = $1` },
    metaWithPrefix: { name: 'svc_storage_meta_prefix', text: `SELECT name, value FROM ${meta} WHERE starts_with(name, $1) ORDER BY name` },
    putMeta: {
      name: 'svc_storage_put_meta',
      text: `INSERT INTO ${meta} (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`,
    },
    deleteMeta: { name: 'svc_storage_delete_meta', text: `DELETE FROM ${meta} WHERE name = $1` },
  };
}
