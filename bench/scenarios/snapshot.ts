import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { Client } from 'pg';
import { EMBEDDED_DATABASE_FILE, EmbeddedPhysical, type StoredEntry } from '@svc/storage';
import { dropTable, POSTGRES_URL } from '@svc/testing';
import { alternating, cpuMicros, type Measurement } from '../run';
import { startConfiguredServer, type KvServer } from './kv';
import type { Scenario } from './scenario';

/**
 * Saving a snapshot of a storage of BENCH_SNAPSHOT_KEYS entries (default 100,000; values of 512
 * random bytes, as ciphertext is), beside its floor, in alternating rounds, on PostgreSQL
 * (`snapshot-save-postgresql`) and on embedded storage (`snapshot-save-embedded`):
 * - target: `GET /v1/sys/storage/raft/snapshot` of an all-in-one server on that storage, read to
 *   its last byte by this process (the server is another), while this process samples the server's
 *   resident memory from /proc every 20 ms;
 * - floor (bench/floors/scan-gzip.ts, its own process): the same cursor read of the same table
 *   (embedded: of a copy of the data directory, made before the server starts, since the server
 *   holds its own), records hashed and gzip'd into nothing;
 * - for reference, `pg_dump -Fc` of the PostgreSQL table, when pg_dump is installed.
 * The table's req/s column is entries per second, its p99 column the save's milliseconds and its CPU
 * column the CPU time per entry of the server or floor process (steadier than time on a shared
 * machine); MB/s of state, archive sizes and memory go to stderr.
 */
const KEYS = Number(process.env.BENCH_SNAPSHOT_KEYS ?? 100_000);
const VALUE_BYTES = 512;
const FILL_BATCH = 5_000;
const SAMPLE_MS = 20;
const MB = 1024 * 1024;

/** What a snapshot of the table holds: its entries and their records' bytes (state.bin). */
export interface Stored {
  entries: number;
  stateBytes: number;
}

const entryName = (n: number) => `entry-${String(n).padStart(7, '0')}`;

/** Writes `keys` rows (KEYS by default) in the storage's layout (key `bench/entry-N` is parent_path `/bench/`, name `entry-N`). */
export async function fill(table: string, keys = KEYS): Promise<Stored> {
  const client = new Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    for (let first = 0; first < keys; first += FILL_BATCH) {
      const names = Array.from({ length: Math.min(FILL_BATCH, keys - first) }, (_, i) => entryName(first + i));
      await client.query(`INSERT INTO ${table} (parent_path, name, value) SELECT '/bench/', * FROM unnest($1::text[], $2::bytea[])`, [
        names,
        names.map(() => randomBytes(VALUE_BYTES)),
      ]);
    }
    await client.query(`ANALYZE ${table}`);
    const { rows } = await client.query<{ entries: string; state_bytes: string }>(
      `SELECT count(*) AS entries, sum(8 + octet_length(substr(parent_path, 2) || name) + octet_length(value)) AS state_bytes FROM ${table}`,
    );
    return { entries: Number(rows[0].entries), stateBytes: Number(rows[0].state_bytes) };
  } finally {
    await client.end();
  }
}

/**
 * Writes KEYS entries (`bench/entry-N`) into a new embedded store at `directory`, through the store
 * itself, before any server opens it (a server holds its directory alone).
 */
async function fillEmbedded(directory: string): Promise<Stored> {
  const store = new EmbeddedPhysical({ path: directory });
  await store.open();
  let stateBytes = 0;
  async function* entries(): AsyncIterable<StoredEntry> {
    for (let n = 0; n < KEYS; n++) {
      const entry = { key: `bench/${entryName(n)}`, value: randomBytes(VALUE_BYTES) };
      stateBytes += 8 + Buffer.byteLength(entry.key) + entry.value.length;
      yield entry;
    }
  }
  try {
    await store.replaceAll(entries(), new Set());
  } finally {
    await store.close();
  }
  return { entries: KEYS, stateBytes };
}

/** Resident memory of `pid` (bytes), from /proc (Linux). */
function residentBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : 0;
}

const mbPerSecond = (bytes: number, ms: number) => bytes / MB / (ms / 1000);

async function saveThroughServer(url: string, token: string, pid: number, stored: Stored): Promise<Measurement> {
  const before = residentBytes(pid);
  const cpuBefore = cpuMicros(pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, residentBytes(pid))), SAMPLE_MS);
  const started = performance.now();
  try {
    const res = await fetch(`${url}/v1/sys/storage/raft/snapshot`, { headers: { 'x-service-token': token } });
    let archiveBytes = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) archiveBytes += chunk.length;
    const ms = performance.now() - started;
    process.stderr.write(
      `    service: ${ms.toFixed(0)} ms, ${(stored.entries / (ms / 1000)).toFixed(0)} entries/s, ${mbPerSecond(stored.stateBytes, ms).toFixed(1)} MB/s of state, ` +
        `archive ${(archiveBytes / MB).toFixed(1)} MB, server RSS ${(before / MB).toFixed(0)} MB before, peak ${(peak / MB).toFixed(0)} MB (+${((peak - before) / MB).toFixed(0)} MB)\n`,
    );
    return {
      reqPerSec: stored.entries / (ms / 1000),
      p99Ms: Math.round(ms),
      errors: 0,
      non2xx: res.status === 200 ? 0 : 1,
      cpuUsPerRequest: (cpuMicros(pid) - cpuBefore) / stored.entries,
    };
  } finally {
    clearInterval(sampler);
  }
}

/** Runs the floor `floor` (bench/floors/FLOOR.ts) once, with `env` naming the storage it reads. */
export function scanFloor(floor: 'pg-scan-gzip' | 'sqlite-scan-gzip', env: NodeJS.ProcessEnv, nodeFlags: string[] = []): Promise<Measurement> {
  const child = spawn(process.execPath, [...nodeFlags, path.join(__dirname, '..', 'floors', `${floor}.js`)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => code !== 0 && reject(new Error(`${floor} exited with ${code}`)));
    createInterface({ input: child.stdout! }).once('line', (line) => {
      const result = JSON.parse(line) as { entries: number; stateBytes: number; gzipBytes: number; ms: number; cpuMicros: number; peakRssBytes: number };
      process.stderr.write(
        `    floor: ${result.ms.toFixed(0)} ms, ${(result.entries / (result.ms / 1000)).toFixed(0)} entries/s, ${mbPerSecond(result.stateBytes, result.ms).toFixed(1)} MB/s of state ` +
          `(${result.entries} entries, ${(result.stateBytes / MB).toFixed(1)} MB), gzip ${(result.gzipBytes / MB).toFixed(1)} MB, peak RSS ${(result.peakRssBytes / MB).toFixed(0)} MB\n`,
      );
      resolve({ reqPerSec: result.entries / (result.ms / 1000), p99Ms: Math.round(result.ms), errors: 0, non2xx: 0, cpuUsPerRequest: result.cpuMicros / result.entries });
    });
  });
}

/** `pg_dump -Fc` of the table into nothing, for reference; skipped when pg_dump is not installed. */
function pgDump(table: string): Promise<void> {
  const started = performance.now();
  const child = spawn('pg_dump', [`--dbname=${POSTGRES_URL}`, `--table=${table}`, '--format=custom', '--no-sync', '--file=/dev/null'], { stdio: ['ignore', 'ignore', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') return reject(err);
      process.stderr.write('    pg_dump: not installed\n');
      resolve();
    });
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`pg_dump exited with ${code}`));
      process.stderr.write(`    pg_dump -Fc: ${(performance.now() - started).toFixed(0)} ms (process start included)\n`);
      resolve();
    });
  });
}

export const snapshotSave: Scenario = {
  name: 'snapshot-save-postgresql',
  async run() {
    const table = `svc_bench_snapshot_${randomBytes(4).toString('hex')}`;
    const server = await startConfiguredServer(
      'bench-snapshot',
      () => `storage "postgresql" {\n  connection_url = "${POSTGRES_URL}"\n  table = "${table}"\n}`,
      () => dropTable(table),
    );
    try {
      const stored = await fill(table);
      await pgDump(table);
      return await alternating(this.name, () => scanFloor('pg-scan-gzip', { FLOOR_PG_URL: POSTGRES_URL, FLOOR_PG_TABLE: table }), () => saveThroughServer(server.url, server.token, server.pid, stored));
    } finally {
      await server.stop();
    }
  },
};

export const snapshotSaveEmbedded: Scenario = {
  name: 'snapshot-save-embedded',
  async run() {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-snapshot-'));
    const [data, floorCopy] = [path.join(dir, 'data'), path.join(dir, 'floor')];
    let server: KvServer | undefined;
    try {
      // The server's own entries (its initialization's) are not counted: a dozen of KEYS.
      const stored = await fillEmbedded(data);
      cpSync(data, floorCopy, { recursive: true });
      server = await startConfiguredServer('bench-snapshot-embedded', () => `storage "embedded" {\n  path = "${data}"\n}`, async () => {});
      const { url, token, pid } = server;
      return await alternating(this.name, () => scanFloor('sqlite-scan-gzip', { FLOOR_SQLITE_FILE: path.join(floorCopy, EMBEDDED_DATABASE_FILE) }), () => saveThroughServer(url, token, pid, stored));
    } finally {
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
