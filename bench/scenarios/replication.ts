import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { api, dropTable, eventually, generateRootWithKeys, POSTGRES_URL, REPLICATION_LISTENER, replicationStatus } from '@svc/testing';
import { setUp, type Measurement } from '../run';
import { startConfiguredServer, type KvServer } from './kv';
import type { Scenario } from './scenario';
import { fill, scanFloor } from './snapshot';
import { paced, type Timing } from './sync-lag';

/**
 * Replication between two all-in-one servers on this machine, each with a cluster listener.
 *
 * `replication-lag`: a KV (version 1) secret on the primary is written 500 times a second; the
 * lag of a write is the time from just before its request until a reader polling the performance
 * secondary sees that value or a newer one. The floor: the same writes, the poller reading the
 * primary itself (written → readable where it was written). Reported: writes/s and the p99 lag
 * (p50 to stderr); the ratio is floor p99 / target p99.
 *
 * `replication-resync-postgresql`: a primary on PostgreSQL whose table holds BENCH_RESYNC_KEYS
 * entries (default 100,000, 512-byte values) activates a secondary on another table; measured
 * from the activation call until the secondary streams at the primary's last index (the whole
 * store came by Merkle diff and sync). The floor: one cursor read of the primary's table
 * (bench/floors/pg-scan-gzip.ts). The req/s column is entries per second, p99 the milliseconds.
 */
const LAG_WRITES_PER_SECOND = 500;
const RESYNC_KEYS = Number(process.env.BENCH_RESYNC_KEYS ?? 100_000);
const STREAMING_MS = 600_000;

function postgresServer(name: string, table: string): Promise<KvServer> {
  return startConfiguredServer(name, () => `storage "postgresql" {\n  connection_url = "${POSTGRES_URL}"\n  table = "${table}"\n}`, () => dropTable(table), REPLICATION_LISTENER);
}

function embeddedServer(name: string): Promise<KvServer> {
  return startConfiguredServer(name, (dir) => `storage "embedded" {\n  path = "${dir}/data"\n}`, async () => undefined, REPLICATION_LISTENER);
}

const asReplicationServer = (server: KvServer) => ({ url: server.url, root: server.token, keys: server.keys });

/** Makes `primary` a performance primary and `secondary` its secondary; resolves when the activation call returns. */
async function activate(primary: KvServer, secondary: KvServer): Promise<void> {
  await setUp(primary.url, primary.token, '/v1/sys/replication/performance/primary/enable', {});
  const made = await api<{ wrap_info: { token: string } }>(primary.url, 'PUT', '/v1/sys/replication/performance/primary/secondary-token', { token: primary.token, body: { id: 'bench' } });
  if (made.status !== 200) throw new Error(`secondary-token: ${made.status} ${made.text}`);
  const res = await api(secondary.url, 'PUT', '/v1/sys/replication/performance/secondary/enable', { token: secondary.token, body: { token: made.body.wrap_info.token } });
  if (res.status !== 204) throw new Error(`secondary/enable: ${res.status} ${res.text}`);
}

/** Resolves once the secondary streams with the primary's last log index applied. */
async function streaming(primary: KvServer, secondary: KvServer): Promise<void> {
  await eventually(async () => {
    const [theirs, ours] = [await replicationStatus(primary, 'performance'), await replicationStatus(secondary, 'performance')];
    return ours.state === 'stream-wals' && ours.last_remote_wal >= theirs.last_wal;
  }, STREAMING_MS, 100);
}

/** Reads `kv/<key>` on `url` until stopped, noting when each value (or a newer one) was first seen. */
function poll(url: string, token: string, key: string, timing: Timing): () => Promise<void> {
  let running = true;
  const done = (async () => {
    while (running) {
      const res = await api<{ data?: { n?: number } }>(url, 'GET', `/v1/kv/${key}`, { token });
      const n = res.body?.data?.n;
      if (typeof n === 'number' && !timing.arrived.has(n)) timing.arrived.set(n, Date.now());
    }
  })();
  return async () => {
    running = false;
    await done;
  };
}

/** Each measurement writes a secret of its own (`key`): a value another one left must not count as arrived. */
async function lagAgainst(writeTo: KvServer, readFrom: KvServer, token: string, key: string): Promise<Measurement> {
  const timing: Timing = { sent: [], arrived: new Map() };
  const stop = poll(readFrom.url, token, key, timing);
  try {
    return await paced(
      timing,
      async (n) => {
        const res = await api(writeTo.url, 'PUT', `/v1/kv/${key}`, { token: writeTo.token, body: { n } });
        if (res.status >= 300) throw new Error(`write: ${res.status}`);
      },
      LAG_WRITES_PER_SECOND,
    );
  } finally {
    await stop();
  }
}

export const replicationLag: Scenario = {
  name: 'replication-lag',
  async run() {
    const primary = await embeddedServer('bench-replication-primary');
    const secondary = await embeddedServer('bench-replication-secondary');
    try {
      await setUp(primary.url, primary.token, '/v1/sys/mounts/kv', { type: 'kv' });
      await activate(primary, secondary);
      const secondaryRoot = await generateRootWithKeys(asReplicationServer(secondary));
      await streaming(primary, secondary);
      const floor = await lagAgainst(primary, primary, primary.token, 'lag-floor');
      const target = await lagAgainst(primary, secondary, secondaryRoot, 'lag-target');
      return { name: this.name, target, floor, ratio: floor.p99Ms / target.p99Ms };
    } finally {
      await Promise.all([primary.stop(), secondary.stop()]);
    }
  },
};

export const replicationResync: Scenario = {
  name: 'replication-resync-postgresql',
  needsPostgres: true,
  async run() {
    const id = randomBytes(4).toString('hex');
    const primary = await postgresServer('bench-resync-primary', `svc_bench_resync_a_${id}`);
    const secondary = await postgresServer('bench-resync-secondary', `svc_bench_resync_b_${id}`);
    try {
      const stored = await fill(`svc_bench_resync_a_${id}`, RESYNC_KEYS);
      const floor = await scanFloor('pg-scan-gzip', { FLOOR_PG_URL: POSTGRES_URL, FLOOR_PG_TABLE: `svc_bench_resync_a_${id}` });
      const started = performance.now();
      await activate(primary, secondary);
      await streaming(primary, secondary);
      const ms = performance.now() - started;
      process.stderr.write(`    resync of ${stored.entries} entries: ${ms.toFixed(0)} ms\n`);
      const target: Measurement = { reqPerSec: stored.entries / (ms / 1000), p99Ms: Math.round(ms), errors: 0, non2xx: 0 };
      return { name: this.name, target, floor, ratio: floor.p99Ms / target.p99Ms };
    } finally {
      await Promise.all([primary.stop(), secondary.stop()]);
    }
  },
};
