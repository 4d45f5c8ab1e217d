import { PGlite, types } from '@electric-sql/pglite';
import { cursorScan, runScanFloor, type ScannedRow } from './scan-gzip';

/**
 * Snapshot floor (scan-gzip.ts) of the embedded storage in the PGlite data directory
 * FLOOR_PGLITE_PATH (a copy: a server holds its own directory): the same read the embedded store's
 * snapshot makes, in PGlite's single session, with bytea decoded by Node's hex codec as the store
 * does (PGlite's own decoder works a byte at a time).
 *
 * A fresh PGlite runs its first queries many times slower than a server's store that has served
 * for a while (catalog caches, PostgreSQL's WebAssembly compiled by V8's optimizing tier, which
 * the bench asks for up front with --no-liftoff): the floor scans the whole table once, untimed,
 * before the timed scan.
 */
const directory = process.env.FLOOR_PGLITE_PATH ?? '';
if (!directory) throw new Error('FLOOR_PGLITE_PATH must name a PGlite data directory');
const TABLE = 'svc_store';

runScanFloor(async () => {
  const db = await PGlite.create(directory, { parsers: { [types.BYTEA]: (text: string) => Buffer.from(text.slice(2), 'hex') } });
  const scan = cursorScan(async (text) => (await db.query<ScannedRow>(text)).rows, TABLE);
  await scan(async () => {});
  return { scan, close: () => db.close() };
});
