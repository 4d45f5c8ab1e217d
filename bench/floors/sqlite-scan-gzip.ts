import Database from 'better-sqlite3';
import { runScanFloor, type ScannedRow } from './scan-gzip';

/**
 * Snapshot floor (scan-gzip.ts) of the embedded storage in the SQLite database FLOOR_SQLITE_FILE
 * (a copy of a data directory's): the same read the embedded store's snapshot makes, a read
 * transaction on a connection of its own, 500 rows a step in key order.
 */
const file = process.env.FLOOR_SQLITE_FILE ?? '';
if (!file) throw new Error('FLOOR_SQLITE_FILE must name the database of an embedded data directory');
const BATCH_ROWS = 500;

runScanFloor(async () => {
  const db = new Database(file, { readonly: true });
  const first = db.prepare<[], ScannedRow>(`SELECT parent_path, name, value FROM store ORDER BY parent_path, name LIMIT ${BATCH_ROWS}`);
  const after = db.prepare<[string, string], ScannedRow>(`SELECT parent_path, name, value FROM store WHERE (parent_path, name) > (?, ?) ORDER BY parent_path, name LIMIT ${BATCH_ROWS}`);
  return {
    scan: async (consume) => {
      db.exec('BEGIN');
      for (let rows = first.all(); rows.length > 0; rows = after.all(rows[rows.length - 1].parent_path, rows[rows.length - 1].name)) await consume(rows);
      db.exec('COMMIT');
    },
    close: async () => void db.close(),
  };
});
