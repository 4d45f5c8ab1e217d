import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { api, dropTable, initAndUnseal, PLAIN_LISTENER, POSTGRES_URL, startServerProcess } from '@svc/testing';
import { measure, startFloor, type Target } from '../run';
import type { Scenario } from './scenario';

/**
 * KV version 2 reads and writes through an all-in-one server on each storage backend, beside the
 * floors: reads beside a bare node:http map lookup (map-read), writes beside a bare node:http
 * single-row PostgreSQL upsert (pg-upsert), both at the same concurrency. Every write goes to a new
 * key (autocannon's id replacement), so no two connections contend for one key's lock or row.
 */
type StorageKind = 'embedded' | 'postgresql';
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
  pid: number;
  stop(): Promise<void>;
}

/** Writes a config with `storage` to a temporary directory, starts `svc server` on it, and unseals it. */
export async function startConfiguredServer(name: string, storage: (dir: string) => string, cleanup: () => Promise<void>): Promise<KvServer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-kv-'));
  const release = async () => {
    rmSync(dir, { recursive: true, force: true });
    await cleanup();
  };
  try {
    const config = path.join(dir, 'server.hcl');
    writeFileSync(config, `${PLAIN_LISTENER}\n${storage(dir)}\n`);
    const server = await startServerProcess(name, [`-config=${config}`], undefined, { logFile: path.join(dir, 'server.log') });
    const url = `http://${server.addresses[0]}`;
    const { rootToken } = await initAndUnseal(url);
    return {
      url,
      token: rootToken,
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

/** An all-in-one server on `storage` with kv version 2 at kv/ holding the secret the reads ask for. */
async function startKvServer(storage: StorageKind): Promise<KvServer> {
  const table = `svc_bench_kv_${randomBytes(4).toString('hex')}`;
  const server =
    storage === 'embedded'
      ? await startConfiguredServer('bench-kv-embedded', (dir) => `storage "embedded" {\n  path = "${path.join(dir, 'data')}"\n}`, async () => {})
      : await startConfiguredServer(
          'bench-kv-postgresql',
          () => `storage "postgresql" {\n  connection_url = "${POSTGRES_URL}"\n  table = "${table}"\n}`,
          () => dropTable(table),
        );
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

function kvTarget(operation: Operation, url: string, token: string): Target {
  const headers = { 'x-service-token': token, 'content-type': 'application/json' };
  return operation === 'read'
    ? { url, method: 'GET', path: READ_PATH, headers }
    : { url, method: 'PUT', path: WRITE_PATH, headers, body: WRITE_BODY, idReplacement: true };
}

/** Measures the operation's floor, in its own process, with its own table for writes. */
async function measureFloor(operation: Operation) {
  if (operation === 'read') {
    const floor = await startFloor('map-read', { FLOOR_KV_PATH: READ_PATH, FLOOR_KV_DATA: JSON.stringify(SECRET) });
    try {
      return await measure(kvTarget('read', floor.url, 'bench-root'));
    } finally {
      floor.stop();
    }
  }
  const table = `svc_bench_floor_${randomBytes(4).toString('hex')}`;
  const floor = await startFloor('pg-upsert', { FLOOR_PG_URL: POSTGRES_URL, FLOOR_PG_TABLE: table, FLOOR_PG_POOL: String(PG_POOL) });
  try {
    return await measure(kvTarget('write', floor.url, 'bench-root'));
  } finally {
    floor.stop();
    await dropTable(table);
  }
}

function kvScenario(operation: Operation, storage: StorageKind): Scenario {
  return {
    name: `kv-v2-${operation}-${storage}`,
    // Writes are measured beside a PostgreSQL upsert, whatever the server's storage.
    needsPostgres: storage === 'postgresql' || operation === 'write',
    async run() {
      const floor = await measureFloor(operation);
      const server = await startKvServer(storage);
      try {
        const target = await measure(kvTarget(operation, server.url, server.token));
        return { name: this.name, target, floor, ratio: target.reqPerSec / floor.reqPerSec };
      } finally {
        await server.stop();
      }
    },
  };
}

export const kvScenarios: Scenario[] = (['embedded', 'postgresql'] as const).flatMap((storage) =>
  (['read', 'write'] as const).map((operation) => kvScenario(operation, storage)),
);
