import type { Database } from 'better-sqlite3';

export interface StoreRow {
  parent_path: string;
  name: string;
  value: Buffer;
}

export interface WalRow {
  idx: number;
  op: 'put' | 'delete' | 'reset';
  key: string;
  value: Buffer | null;
}

export interface ChangeRow {
  seq: number;
  origin: string;
  key: string;
}

/** Rows read per step of a scan, and change rows the feed keeps at most. */
export const SCAN_BATCH_ROWS = 500;

/** The statements of the embedded store, prepared once per connection. */
export function prepareStatements(db: Database) {
  const prepare = <Row = unknown>(sql: string) => db.prepare<unknown[], Row>(sql);
  /** A statement whose rows are their first column's value. */
  const pluck = <Value>(sql: string) => db.prepare<unknown[], Value>(sql).pluck();
  return {
    get: pluck<Buffer>('SELECT value FROM store WHERE parent_path = ? AND name = ?'),
    put: prepare('INSERT INTO store (parent_path, name, value) VALUES (?, ?, ?) ON CONFLICT (parent_path, name) DO UPDATE SET value = excluded.value'),
    delete: prepare('DELETE FROM store WHERE parent_path = ? AND name = ?'),
    deleteAll: prepare('DELETE FROM store'),
    /** The names of a directory's own entries. */
    files: pluck<string>('SELECT name FROM store WHERE parent_path = ? ORDER BY name'),
    /** The first directory after `$1`, before `$2`: the first step of a listing's skip scan. */
    firstDirectory: pluck<string>('SELECT parent_path FROM store WHERE parent_path > ? AND parent_path < ? ORDER BY parent_path LIMIT 1'),
    /** The first directory from `$1` on, before `$2`: the next steps. */
    nextDirectory: pluck<string>('SELECT parent_path FROM store WHERE parent_path >= ? AND parent_path < ? ORDER BY parent_path LIMIT 1'),
    scanFirst: prepare<StoreRow>(`SELECT parent_path, name, value FROM store ORDER BY parent_path, name LIMIT ${SCAN_BATCH_ROWS}`),
    scanAfter: prepare<StoreRow>(`SELECT parent_path, name, value FROM store WHERE (parent_path, name) > (?, ?) ORDER BY parent_path, name LIMIT ${SCAN_BATCH_ROWS}`),
    logging: pluck<number>('SELECT logging FROM head'),
    lastIndex: pluck<number>('SELECT last_idx FROM head'),
    setLogging: prepare('UPDATE head SET logging = ? WHERE logging <> ?'),
    /** Takes `$1` log indexes when logging is on: answers the last of them, or nothing. */
    takeIndexes: pluck<number>('UPDATE head SET last_idx = last_idx + ? WHERE logging RETURNING last_idx'),
    appendLog: prepare('INSERT INTO wal (idx, op, key, value) VALUES (?, ?, ?, ?)'),
    setLogHead: prepare('UPDATE head SET last_idx = ?, logging = ?'),
    entriesAfter: prepare<WalRow>('SELECT idx, op, key, value FROM wal WHERE idx > ? ORDER BY idx LIMIT ?'),
    trimLog: prepare('DELETE FROM wal WHERE idx <= ?'),
    getMeta: pluck<Buffer>('SELECT value FROM meta WHERE name = ?'),
    putMeta: prepare('INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value'),
    deleteMeta: prepare('DELETE FROM meta WHERE name = ?'),
    metaWithPrefix: prepare<{ name: string; value: Buffer }>('SELECT name, value FROM meta WHERE name >= $prefix AND substr(name, 1, length($prefix)) = $prefix ORDER BY name'),
    noteChange: pluck<number>('INSERT INTO changes (origin, key) VALUES (?, ?) RETURNING seq'),
    changesAfter: prepare<ChangeRow>('SELECT seq, origin, key FROM changes WHERE seq > ? ORDER BY seq'),
    lastChange: pluck<number>("SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'changes'), 0)"),
    trimChanges: prepare('DELETE FROM changes WHERE seq <= ?'),
    dataVersion: pluck<number>('PRAGMA data_version'),
  };
}

export type EmbeddedStatements = ReturnType<typeof prepareStatements>;
