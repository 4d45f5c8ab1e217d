/**
 * Replication between clusters on PostgreSQL storage, each a gateway over a database of its own
 * (its storage table with the log and Merkle metadata tables beside it), NATS and Redis: A is the performance and DR
 * primary, B its performance secondary (whose transit service must not write replicated storage
 * itself) under an allow paths filter, C its DR secondary, whose
 * stored Merkle index is corrupted on purpose to be found by merkle-check and mended by reindex.
 */
import { activateSecondary, drOperationToken, eventually, generateRootWithKeys, replicationCalls, replicationStatus, startReplicationServer, withPostgres, type ReplicationServer } from '@svc/testing';

const REPLICATED_MS = 120_000;

let a: ReplicationServer;
let b: ReplicationServer;
let c: ReplicationServer;
const A = replicationCalls(() => a);
const B = replicationCalls(() => b);
const C = replicationCalls(() => c);

const activate = (mode: 'performance' | 'dr', secondary: ReplicationServer, id: string) => activateSecondary(a, mode, secondary, id);

/** Resolves once `server`'s secondary of `mode` has applied A's log as far as it stands now. */
async function caughtUp(server: ReplicationServer, mode: 'performance' | 'dr'): Promise<void> {
  const { last_wal: written } = await replicationStatus(a, mode);
  await eventually(async () => {
    const status = await replicationStatus(server, mode);
    return status.state === 'stream-wals' && status.last_remote_wal >= written;
  }, REPLICATED_MS);
}

beforeAll(async () => {
  // A and B run transit as an engine service of its own (a process beside the gateway).
  [a, b, c] = await Promise.all([{ services: ['transit'] }, { services: ['transit'] }, {}].map((options) => startReplicationServer({ ...options, ownDatabase: true }, 'distributed')));
  await A.ok('PUT', 'sys/replication/performance/primary/enable', {});
  await A.ok('PUT', 'sys/replication/dr/primary/enable', {});
  for (const mount of ['kv', 'other']) await A.ok('POST', `sys/mounts/${mount}`, { type: 'kv' });
  await A.ok('PUT', 'kv/first', { value: 'before activation' });
  await activate('performance', b, 'perf-b');
  b.root = await generateRootWithKeys(b);
  await activate('dr', c, 'dr-c');
}, 300_000);

afterAll(async () => {
  await Promise.all([a, b, c].map((server) => server?.topology.stop()));
});

test('what A held before activation and writes after reaches the performance secondary, then streams', async () => {
  await eventually(async () => (await B.call('GET', 'kv/first')).body.data?.value === 'before activation', REPLICATED_MS);
  await A.ok('PUT', 'kv/second', { value: 'streamed' });
  await A.ok('DELETE', 'kv/first');
  await caughtUp(b, 'performance');
  expect((await B.ok('GET', 'kv/second')).data).toEqual({ value: 'streamed' });
  expect((await B.call('GET', 'kv/first')).status).toBe(404);
  // Each side's merkle_root is as of its index's last catch-up with its log.
  await eventually(async () => {
    const [primary, secondary] = await Promise.all([replicationStatus(a, 'performance'), replicationStatus(b, 'performance')]);
    return secondary.merkle_root === primary.merkle_root;
  }, REPLICATED_MS);
});

test('a transit key made through the secondary\'s transit service is made on the primary, and encrypts on both', async () => {
  await A.ok('POST', 'sys/mounts/transit', { type: 'transit' });
  await caughtUp(b, 'performance');
  // The log's index moves when B's storage has the mount; B's gateway reloads its mount table just after.
  await eventually(async () => (await B.call('GET', 'sys/mounts')).body.data?.['transit/'] !== undefined, REPLICATED_MS);
  // B's transit service refuses to write the key into B's replicated storage; the gateway forwards the request.
  await B.ok('POST', 'transit/keys/orders', {});
  expect((await A.ok('GET', 'transit/keys/orders')).data.name).toBe('orders');
  const plaintext = Buffer.from('made on the primary').toString('base64');
  const { ciphertext } = (await B.ok('POST', 'transit/encrypt/orders', { plaintext })).data;
  expect((await A.ok('POST', 'transit/decrypt/orders', { ciphertext })).data.plaintext).toBe(plaintext);
  const { ciphertext: fromA } = (await A.ok('POST', 'transit/encrypt/orders', { plaintext })).data;
  expect((await B.ok('POST', 'transit/decrypt/orders', { ciphertext: fromA })).data.plaintext).toBe(plaintext);

  // A rotation on the primary is in use by B's transit service, which just cached the key, once B has applied it.
  await A.ok('POST', 'transit/keys/orders/rotate', {});
  await caughtUp(b, 'performance');
  expect((await B.ok('POST', 'transit/encrypt/orders', { plaintext })).data.ciphertext).toMatch(/^svc:v2:/);
});

test('an allow paths filter ships only the mounts it names; the dynamic filter shows it on the secondary', async () => {
  await A.ok('PUT', 'sys/replication/performance/primary/paths-filter/perf-b', { mode: 'allow', paths: ['kv/'] });
  await A.ok('PUT', 'other/kept-from-b', { value: 'not allowed' });
  await A.ok('PUT', 'kv/allowed', { value: 'allowed' });
  await caughtUp(b, 'performance');
  expect((await B.ok('GET', 'kv/allowed')).data).toEqual({ value: 'allowed' });
  expect((await B.call('GET', 'other/kept-from-b')).status).toBe(404);
  // The mounts the filter keeps from B, as B's primary tells it with the heartbeats.
  await eventually(async () => {
    const dynamic = await B.call('GET', 'sys/replication/performance/secondary/dynamic-filter/perf-b');
    return dynamic.status === 200 && dynamic.body.data.dynamic_filtered_mounts.includes('other/');
  }, REPLICATED_MS);
  expect((await B.ok('GET', 'sys/replication/performance/secondary/dynamic-filter/perf-b')).data.dynamic_filtered_mounts).not.toContain('kv/');
});

test('a page of the DR secondary\'s stored Merkle index altered in its table is reported by merkle-check and mended by reindex', async () => {
  await caughtUp(c, 'dr');
  const token = await drOperationToken(c, a.keys);
  const check = () => C.ok('POST', 'sys/replication/dr/secondary/merkle-check', { dr_operation_token: token }, '');
  const clean = await check();
  expect(clean.data.merkle_corruption_report).toMatchObject({ corrupted_root: false, corrupted_tree_map: { '1': { corrupted_index_tuples_map: null } } });

  // Zero one value hash of a stored page of the replicated tree, as a bad disk might.
  const meta = `${c.topology.storageTable}_meta`;
  const page = await withPostgres(async (client) => {
    const { rows } = await client.query<{ name: string; value: Buffer }>(`SELECT name, value FROM "${meta}" WHERE name LIKE 'merkle/replicated/page/%' ORDER BY name LIMIT 1`);
    expect(rows).toHaveLength(1);
    const entries = JSON.parse(rows[0].value.toString('utf8')) as [string, string][];
    entries[0][1] = '0'.repeat(64);
    await client.query(`UPDATE "${meta}" SET value = $1 WHERE name = $2`, [Buffer.from(JSON.stringify(entries)), rows[0].name]);
    return String(Number(rows[0].name.split('/').pop()));
  }, c.topology.storageUrl);

  const found = await check();
  const report = found.data.merkle_corruption_report;
  expect(report.corrupted_tree_map['1'].corrupted_subtree_root).toBe(true);
  expect(report.corrupted_tree_map['1'].corrupted_index_tuples_map).toEqual({ [page]: { corrupted: true, subpages: [expect.any(Number)] } });
  expect(report.corrupted_tree_map['2'].corrupted_index_tuples_map).toBeNull();

  const reindexed = await C.ok('POST', 'sys/replication/dr/secondary/reindex', { dr_operation_token: token, diff: true }, '');
  expect(reindexed.warnings).toEqual(expect.arrayContaining([expect.stringContaining('1 page(s) of the replicated tree differed from storage')]));
  const mended = await check();
  expect(mended.data.merkle_corruption_report.corrupted_tree_map['1']).toMatchObject({ corrupted_subtree_root: false, corrupted_index_tuples_map: null });
});
