import cluster from 'node:cluster';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { serveWriteFloor } from './serve';

/**
 * Floor for a KV version 2 write on embedded storage: the same durable write on the same engine,
 * done directly (one upsert per request, committed and synced to disk before the answer, SQLite in
 * write-ahead-log mode with full sync, as the embedded store runs it). FLOOR_SQLITE_DIR names a
 * directory of the bench's own; FLOOR_WORKERS > 1 serves from that many node:cluster workers
 * sharing the port and the database, as a server's gateway workers do.
 */
const directory = process.env.FLOOR_SQLITE_DIR;
if (!directory) throw new Error('FLOOR_SQLITE_DIR must name a directory');
const workers = Number(process.env.FLOOR_WORKERS ?? 1);

if (workers > 1 && cluster.isPrimary) {
  mkdirSync(directory, { recursive: true });
  for (let i = 0; i < workers; i++) cluster.fork();
  process.on('SIGTERM', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    process.exit(0);
  });
} else {
  mkdirSync(directory, { recursive: true });
  const db = new Database(join(directory, 'floor.db'));
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID');
  const upsert = db.prepare('INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
  serveWriteFloor((path, data) => void upsert.run(path, data));
}
