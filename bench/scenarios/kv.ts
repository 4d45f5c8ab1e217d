import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { api, dropTable, initAndUnseal, PLAIN_LISTENER, POSTGRES_URL, startServerProcess } from '@svc/testing';
import { alternating, measure, startFloor, warmUp, type Target } from '../run';
import type { Scenario } from './scenario';

/**
 * KV version 2 reads and writes through an all-in-one server on each storage backend, beside the
 * floors: reads beside a bare node:http map lookup (map-read), writes beside a bare node:http
 * single-row upsert on the same engine (pg-upsert on PostgreSQL, sqlite-upsert on embedded), both at
 * the same concurrency, in alternating rounds with the CPU time of the server and of the floor per
 * request. Every write goes to a new key (the load generator's id replacement), so no two
 * connections contend for one key's lock or row.
 */
export type StorageKind = 'inmem' | 'embedded' | 'postgresql';
type Operation = 'read' | 'write';

const READ_PATH = '/v1/kv/data/bench/read';
const WRITE_PATH = '/v1/kv/data/bench/[<id>]';
const SECRET = { username: 'bench', password: randomBytes(16).toString('hex') };
const WRITE_BODY = JSON.stringify({ data: { id: '[<id>]', password: SECRET.password } });
/** PostgreSQL storage's default pool, which the upsert floor matches. */
const PG_POOL = 10;

export interface KvServer {
  url: string;
  token: string;
  /** The unseal keys (one share). */
  keys: string[];
  pid: number;
  stop(): Promise<void>;
}

/** Writes a config with `storage` (and `listener`) to a temporary directory, starts `svc server` on it, and unseals it. */
export async function startConfiguredServer(name: string, storage: (dir: string) => string, cleanup: () => Promise<void>, listener = PLAIN_LISTENER, workers = 1): Promise<KvServer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-kv-'));
  const release = async () => {
    rmSync(dir, { recursive: true, force: true });
    await cleanup();
  };
  try {
    const config = path.join(dir, 'server.hcl');
    writeFileSync(config, `${listener}\n${storage(dir)}\n`);
    const server = await startServerProcess(name, [`-config=${config}`, `-workers=${workers}`], undefined, { logFile: path.join(dir, 'server.log') });
    const url = `http://${server.addresses[0]}`;
    const { rootToken, keys } = await initAndUnseal(url);
    return {
      url,
      token: rootToken,
      keys,
      pid: server.child.pid!,
      stop: async () => {
        await server.stop();
        await release();
      },
    };
  } catch (err) {
    await release();
    throw err;
  }
}

/** An all-in-one server on `storage` with `workers` workers and kv version 2 at kv/ holding the secret the reads ask for. */
export async function startKvServer(storage: StorageKind, workers = 1): Promise<KvServer> {
  const table = `svc_bench_kv_${randomBytes(4).toString('hex')}`;
  const name = `bench-kv-${storage}`;
  const server =
    storage === 'postgresql'
      ? await startConfiguredServer(name, () => `storage "postgresql" {\n  connection_url = "${POSTGRES_URL}"\n  table = "${table}"\n}`, () => dropTable(table), PLAIN_LISTENER, workers)
      : await startConfiguredServer(name, (dir) => `storage "${storage}" {\n${storage === 'embedded' ? `  path = "${path.join(dir, 'data')}"\n` : ''}}`, async () => {}, PLAIN_LISTENER, workers);
  try {
    const mounted = await api(server.url, 'POST', '/v1/sys/mounts/kv', { token: server.token, body: { type: 'kv', options: { version: '2' } } });
    if (mounted.status !== 204) throw new Error(`mounting kv failed: ${mounted.status} ${mounted.text}`);
    const written = await api(server.url, 'PUT', READ_PATH, { token: server.token, body: { data: SECRET } });
    if (written.status !== 200) throw new Error(`writing the read secret failed: ${written.status} ${written.text}`);
    return server;
  } catch (err) {
    await server.stop();
    throw err;
  }
}

export function kvTarget(operation: Operation, url: string, token: string, pid: number): Target {
  const headers = { 'x-service-token': token, 'content-type': 'application/json' };
  return operation === 'read'
    ? { url, method: 'GET', path: READ_PATH, headers, pids: [pid] }
    : { url, method: 'PUT', path: WRITE_PATH, headers, body: WRITE_BODY, idReplacement: true, pids: [pid] };
}

/** Starts the operation's floor in its own process, with its own table (or database file) for writes. */
async function startKvFloor(operation: Operation, storage: StorageKind): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  if (operation === 'read') {
    const floor = await startFloor('map-read', { FLOOR_KV_PATH: READ_PATH, FLOOR_KV_DATA: JSON.stringify(SECRET) });
    return { url: floor.url, pid: floor.pid, stop: async () => floor.stop() };
  }
  if (storage !== 'postgresql') {
    const directory = mkdtempSync(path.join(tmpdir(), 'svc-bench-floor-'));
    const floor = await startFloor('sqlite-upsert', { FLOOR_SQLITE_DIR: directory });
    return { url: floor.url, pid: floor.pid, stop: async () => (floor.stop(), rmSync(directory, { recursive: true, force: true })) };
  }
  const table = `svc_bench_floor_${randomBytes(4).toString('hex')}`;
  const floor = await startFloor('pg-upsert', { FLOOR_PG_URL: POSTGRES_URL, FLOOR_PG_TABLE: table, FLOOR_PG_POOL: String(PG_POOL) });
  return {
    url: floor.url,
    pid: floor.pid,
    stop: async () => {
      floor.stop();
      await dropTable(table);
    },
  };
}

function kvScenario(operation: Operation, storage: StorageKind): Scenario {
  return {
    name: `kv-v2-${operation}-${storage}`,
    needsPostgres: storage === 'postgresql',
    async run() {
      const floor = await startKvFloor(operation, storage);
      try {
        const server = await startKvServer(storage);
        try {
          const floorTarget = kvTarget(operation, floor.url, 'bench-root', floor.pid);
          const target = kvTarget(operation, server.url, server.token, server.pid);
          await warmUp(floorTarget);
          await warmUp(target);
          return await alternating(this.name, () => measure(floorTarget), () => measure(target));
        } finally {
          await server.stop();
        }
      } finally {
        await floor.stop();
      }
    },
  };
}

export const kvScenarios: Scenario[] = (['embedded', 'postgresql'] as const).flatMap((storage) =>
  (['read', 'write'] as const).map((operation) => kvScenario(operation, storage)),
);
