import { availableParallelism } from 'node:os';
import { api } from '@svc/testing';
import { measure, startDevServer, warmUp, type Measurement, type ScenarioResult, type Target } from '../run';
import type { Scenario } from './scenario';
import { kvTarget, startKvServer, type StorageKind } from './kv';
import { encryptTarget, prepareTransit } from './transit';

/**
 * What gateway workers add: KV v2 read and transit encrypt through the dev server, and KV v2 write
 * on each storage backend, with 1, 2, … N workers (N = CPUs, BENCH_SCALE_MAX to change it). Each
 * row's floor is the same operation with one worker, so its ratio is the speed-up; the cores column
 * says how much CPU the server used for it.
 */
const MAX_WORKERS = Number(process.env.BENCH_SCALE_MAX ?? availableParallelism());
const READ_PATH = '/v1/secret/data/bench/read';

type Operation = 'kv-read' | 'transit-encrypt' | `kv-write ${StorageKind}`;
const OPERATIONS: readonly Operation[] = ['kv-read', 'transit-encrypt', 'kv-write inmem', 'kv-write embedded', 'kv-write postgresql'];

/** Starts a dev server with `workers` workers, prepares the operation and measures it. */
async function measureWith(operation: Operation, workers: number): Promise<Measurement> {
  if (operation.startsWith('kv-write')) return measureWrites(operation.slice('kv-write '.length) as StorageKind, workers);
  const server = await startDevServer(undefined, workers);
  try {
    let target: Target;
    if (operation === 'kv-read') {
      const written = await api(server.url, 'PUT', READ_PATH, { token: server.token, body: { data: { username: 'bench', password: 'not-a-real-password' } } });
      if (written.status !== 200) throw new Error(`writing the read secret failed: ${written.status} ${written.text}`);
      target = { url: server.url, method: 'GET', path: READ_PATH, headers: { 'x-service-token': server.token }, pids: server.pids };
    } else {
      await prepareTransit(server.url, server.token);
      target = encryptTarget(server.url, server.token, server.pids);
    }
    await warmUp(target);
    return await measure(target);
  } finally {
    await server.stop();
  }
}

async function measureWrites(storage: StorageKind, workers: number): Promise<Measurement> {
  const server = await startKvServer(storage, workers);
  try {
    const target = kvTarget('write', server.url, server.token, server.pid);
    await warmUp(target);
    return await measure(target);
  } finally {
    await server.stop();
  }
}

export const scale: Scenario = {
  name: 'scale',
  async run() {
    const rows: ScenarioResult[] = [];
    for (const operation of OPERATIONS) {
      const one = await measureWith(operation, 1);
      rows.push({ name: `scale ${operation} ×1`, target: one, floor: one, ratio: 1 });
      for (let workers = 2; workers <= MAX_WORKERS; workers++) {
        const many = await measureWith(operation, workers);
        rows.push({ name: `scale ${operation} ×${workers}`, target: many, floor: one, ratio: many.reqPerSec / one.reqPerSec });
        process.stderr.write(`  ${operation} ×${workers}: ${(rows.at(-1)!.ratio * 100).toFixed(0)} % of one worker\n`);
      }
    }
    return rows;
  },
};
