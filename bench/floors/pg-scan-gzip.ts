import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createGzip } from 'node:zlib';
import { Client } from 'pg';

/**
 * Floor for a snapshot save, run once: the same point-in-time read a snapshot makes (a cursor in a
 * REPEATABLE READ transaction, 500 rows a fetch, in key order) of FLOOR_PG_TABLE at FLOOR_PG_URL,
 * each row encoded as a length-prefixed record, hashed and streamed through gzip into nothing. What
 * the service adds on top (the temporary state file, the tar archive, sealing the checksums, HTTP)
 * is what the ratio measures. Prints one JSON line: entries, state bytes, gzip bytes, milliseconds
 * and CPU microseconds from connecting to the last byte, and this process's peak RSS.
 */
const table = process.env.FLOOR_PG_TABLE ?? '';
if (!/^[a-z_][a-z0-9_]*$/.test(table)) throw new Error('FLOOR_PG_TABLE must be a plain lower-case table name');
const FETCH_ROWS = 500;

async function main(): Promise<void> {
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const client = new Client({ connectionString: process.env.FLOOR_PG_URL });
  await client.connect();
  const gzip = createGzip();
  let gzipBytes = 0;
  gzip.on('data', (chunk: Buffer) => (gzipBytes += chunk.length));
  const finished = new Promise((resolve) => gzip.once('end', resolve));
  const hash = createHash('sha256');
  let entries = 0;
  let stateBytes = 0;
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  await client.query(`DECLARE floor_scan NO SCROLL CURSOR FOR SELECT parent_path, name, value FROM ${table} ORDER BY parent_path, name`);
  for (;;) {
    const { rows } = await client.query<{ parent_path: string; name: string; value: Buffer }>(`FETCH ${FETCH_ROWS} FROM floor_scan`);
    if (rows.length === 0) break;
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
  }
  await client.query('COMMIT');
  await client.end();
  gzip.end();
  await finished;
  hash.digest();
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  process.stdout.write(`${JSON.stringify({ entries, stateBytes, gzipBytes, ms, cpuMicros: cpu.user + cpu.system, peakRssBytes: process.resourceUsage().maxRSS * 1024 })}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});
