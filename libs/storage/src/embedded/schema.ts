import type { Database } from 'better-sqlite3';

/**
 * The embedded store's schema, one migration per entry, oldest first; `PRAGMA user_version` counts
 * those applied. Every column of keys and paths compares bytewise (SQLite's BINARY collation), the
 * order the directory range scans rely on, as PostgreSQL's "C" collation does for its backend.
 *
 * - `store`: each entry under its parent directory (see sql/layout.ts), so a listing reads one
 *   directory's rows.
 * - `wal`, `head`, `meta`: the replication log, its head (last index, logging switch) and the
 *   replication metadata, as in the PostgreSQL backend.
 * - `changes`: every key each commit wrote, with the connection that wrote it, for the other
 *   processes that share the file to bring their caches up to date (see ChangeFeed).
 */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE store (parent_path TEXT NOT NULL, name TEXT NOT NULL, value BLOB NOT NULL, PRIMARY KEY (parent_path, name)) WITHOUT ROWID;
   CREATE TABLE wal (idx INTEGER PRIMARY KEY, op TEXT NOT NULL CHECK (op IN ('put', 'delete', 'reset')), key TEXT NOT NULL, value BLOB);
   CREATE TABLE head (id INTEGER PRIMARY KEY CHECK (id = 1), last_idx INTEGER NOT NULL, logging INTEGER NOT NULL);
   INSERT INTO head (id, last_idx, logging) VALUES (1, 0, 0);
   CREATE TABLE meta (name TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
   CREATE TABLE changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, origin TEXT NOT NULL, key TEXT NOT NULL);`,
];

/** Brings the schema up to date; processes opening the file together migrate one at a time. */
export function migrate(db: Database): void {
  db.transaction(() => {
    const applied = db.pragma('user_version', { simple: true }) as number;
    if (applied > MIGRATIONS.length) {
      throw new Error(`embedded storage: the data directory was written by a newer version (schema ${applied}, this version knows ${MIGRATIONS.length})`);
    }
    for (const migration of MIGRATIONS.slice(applied)) db.exec(migration);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}
