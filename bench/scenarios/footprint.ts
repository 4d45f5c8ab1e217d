import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import * as path from 'node:path';
import { footprint, measure, startFloor, type Measurement, type ScenarioResult, type Target } from '../run';
import { kvTarget, startKvServer } from './kv';
import type { Scenario } from './scenario';

/**
 * What a server holds in memory once its data is written, by gateway workers: an all-in-one server
 * on embedded storage after SECRETS KV version 2 writes of new keys, with 1, 2, … N workers (N =
 * CPUs, BENCH_SCALE_MAX to change it), beside the floor: bare node:http processes, as many as the
 * server's, writing the same rows to SQLite (sqlite-upsert under node:cluster). Memory is read from
 * /proc after the writes (the table's RSS and PSS columns); the req/s columns are the write rates.
 */
const SECRETS = Number(process.env.BENCH_FOOTPRINT_SECRETS ?? 10_000);
const MAX_WORKERS = Number(process.env.BENCH_SCALE_MAX ?? availableParallelism());
const FIRST_WRITE_SECONDS = 2;

/** Writes until SECRETS writes were answered, the rest in one stretch sized by the first's rate; the rate is that of the last stretch. */
async function writeSecrets(target: Target, pid: number): Promise<Measurement> {
  let answered = 0;
  let seconds = FIRST_WRITE_SECONDS;
  let last: Measurement;
  do {
    last = await measure(target, undefined, seconds);
    answered += last.requests ?? 0;
    seconds = Math.max(1, Math.ceil((SECRETS - answered) / Math.max(last.reqPerSec, 1)));
  } while (answered < SECRETS && (last.requests ?? 0) > 0);
  return { ...last, requests: answered, memory: footprint(pid) };
}

async function serverAfterWrites(workers: number): Promise<Measurement> {
  const server = await startKvServer('embedded', workers);
  try {
    return await writeSecrets(kvTarget('write', server.url, server.token, server.pid), server.pid);
  } finally {
    await server.stop();
  }
}

async function floorAfterWrites(workers: number): Promise<Measurement> {
  const directory = mkdtempSync(path.join(tmpdir(), 'svc-bench-floor-'));
  // The server's shape: one process, or a primary and its workers.
  const floor = await startFloor('sqlite-upsert', { FLOOR_SQLITE_DIR: directory, FLOOR_WORKERS: String(workers) });
  try {
    return await writeSecrets(kvTarget('write', floor.url, 'bench-root', floor.pid), floor.pid);
  } finally {
    floor.stop();
    rmSync(directory, { recursive: true, force: true });
  }
}

export const footprintScenario: Scenario = {
  name: 'footprint',
  async run() {
    const rows: ScenarioResult[] = [];
    for (let workers = 1; workers <= MAX_WORKERS; workers++) {
      const floor = await floorAfterWrites(workers);
      const target = await serverAfterWrites(workers);
      rows.push({ name: `footprint embedded ×${workers}`, target, floor, ratio: target.reqPerSec / floor.reqPerSec });
      process.stderr.write(`  ×${workers}: RSS ${target.memory!.rssMb} MB, PSS ${target.memory!.pssMb} MB after ${target.requests} writes (floor ${floor.memory!.pssMb} MB)\n`);
    }
    return rows;
  },
};
