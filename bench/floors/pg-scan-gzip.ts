import { Client } from 'pg';
import { cursorScan, runScanFloor, type ScannedRow } from './scan-gzip';

/** Snapshot floor (scan-gzip.ts) of FLOOR_PG_TABLE at FLOOR_PG_URL. */
const table = process.env.FLOOR_PG_TABLE ?? '';
if (!/^[a-z_][a-z0-9_]*$/.test(table)) throw new Error('FLOOR_PG_TABLE must be a plain lower-case table name');

runScanFloor(async () => {
  const client = new Client({ connectionString: process.env.FLOOR_PG_URL });
  await client.connect();
  return { scan: cursorScan(async (text) => (await client.query<ScannedRow>(text)).rows, table), close: () => client.end() };
});
