import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createGzip } from 'node:zlib';

/** A storage row as the PostgreSQL and embedded backends keep it. */
export interface ScannedRow {
  parent_path: string;
  name: string;
  value: Buffer;
}

/** An open storage: its rows in key order, a batch at a time to `consume`, then closed. */
export interface OpenStorage {
  scan(consume: (rows: ScannedRow[]) => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

/** Rows a fetch of a snapshot floor's cursor takes, as a snapshot's scan does. */
const FETCH_ROWS = 500;

/**
 * The read a snapshot makes, through `query` on one session: a cursor over `table` in key order
 * in a REPEATABLE READ transaction, FETCH_ROWS rows a fetch.
 */
export function cursorScan(query: (text: string) => Promise<ScannedRow[]>, table: string): OpenStorage['scan'] {
  return async (consume) => {
    await query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await query(`DECLARE floor_scan NO SCROLL CURSOR FOR SELECT parent_path, name, value FROM ${table} ORDER BY parent_path, name`);
    for (;;) {
      const rows = await query(`FETCH ${FETCH_ROWS} FROM floor_scan`);
      if (rows.length === 0) break;
      await consume(rows);
    }
    await query('COMMIT');
  };
}

/**
 * Floor for a snapshot save, run once: `open` opens the storage (untimed: a server's is open
 * already), whose scan reads it as of one point in time, and each row is encoded as a
 * length-prefixed record (`state.bin`'s), hashed and streamed through gzip into nothing. What the
 * service adds on top (the temporary state file, the tar archive, sealing the checksums, HTTP) is
 * what the ratio measures. Prints one JSON line: entries, state bytes, gzip bytes, milliseconds and
 * CPU microseconds from the scan's start to the last byte, and this process's peak RSS.
 */
export function runScanFloor(open: () => Promise<OpenStorage>): void {
  measure(open).catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}

async function measure(open: () => Promise<OpenStorage>): Promise<void> {
  const storage = await open();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const gzip = createGzip();
  let gzipBytes = 0;
  gzip.on('data', (chunk: Buffer) => (gzipBytes += chunk.length));
  const finished = new Promise((resolve) => gzip.once('end', resolve));
  const hash = createHash('sha256');
  let entries = 0;
  let stateBytes = 0;
  await storage.scan(async (rows) => {
    for (const row of rows) {
      const key = Buffer.from(row.parent_path.slice(1) + row.name, 'utf8');
      const record = Buffer.allocUnsafe(8 + key.length + row.value.length);
      record.writeUInt32BE(key.length, 0);
      key.copy(record, 4);
      record.writeUInt32BE(row.value.length, 4 + key.length);
      row.value.copy(record, 8 + key.length);
      hash.update(record);
      if (!gzip.write(record)) await new Promise((resolve) => gzip.once('drain', resolve));
      entries++;
      stateBytes += record.length;
    }
  });
  gzip.end();
  await finished;
  hash.digest();
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  await storage.close();
  process.stdout.write(`${JSON.stringify({ entries, stateBytes, gzipBytes, ms, cpuMicros: cpu.user + cpu.system, peakRssBytes: process.resourceUsage().maxRSS * 1024 })}\n`);
}
