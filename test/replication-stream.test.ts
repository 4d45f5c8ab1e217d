/**
 * Issue 19, replication part 3: the data path. A is the performance and DR primary (a shipper
 * buffer of 64 entries, set by its `replication` stanza), B its performance secondary, C its DR
 * secondary, each all-in-one with its own embedded storage. Writes on A reach B and C over the
 * cluster link; what is local stays local; a secondary that falls behind the buffer resynchronizes
 * by Merkle diff and sync, then streams again.
 */
import { activateSecondary, api, eventually, generateRootWithKeys, replicationCalls, replicationStatus, startReplicationServer, type ReplicationServer } from '@svc/testing';

/** Long enough for a resync on a loaded two-core machine (a minute has been seen); streaming itself takes well under a second. */
const REPLICATED_MS = 180_000;
/** A test waiting on a resync: several of those bounds. */
const RESYNC_TEST_MS = 600_000;
const BUFFER_LENGTH = 64;

type Server = ReplicationServer;
const status = replicationStatus;

let a: Server;
let b: Server;
let c: Server;
const A = replicationCalls(() => a);
const B = replicationCalls(() => b);

/** Resolves once `where` reads on `server` with `value` in its data (the write was replicated). */
async function replicated(call: typeof A.call, where: string, value: string): Promise<void> {
  await eventually(async () => {
    const res = await call('GET', where);
    return res.status === 200 && res.body.data?.value === value;
  }, REPLICATED_MS);
}

/**
 * C is a DR secondary, which serves no client requests: what A wrote has reached it once C applied
 * A's log as far as it stood after the write (C receives every entry, local ones included).
 */
async function reachedDr(): Promise<void> {
  const { last_wal: written } = await status(a, 'dr');
  await eventually(async () => (await status(c, 'dr')).last_remote_wal >= written, REPLICATED_MS);
}

const activate = (mode: 'performance' | 'dr', secondary: Server, id: string) => activateSecondary(a, mode, secondary, id);

beforeAll(async () => {
  a = await startReplicationServer({ gatewayConfig: `replication {\n  log_shipper_buffer_length = ${BUFFER_LENGTH}\n}\n` });
  b = await startReplicationServer();
  c = await startReplicationServer();
  await A.ok('PUT', 'sys/replication/performance/primary/enable', {});
  await A.ok('PUT', 'sys/replication/dr/primary/enable', {});
  await A.ok('POST', 'sys/mounts/kv', { type: 'kv' });
  await A.ok('PUT', 'kv/before-activation', { value: 'old' });
  await activate('performance', b, 'perf-b');
  b.root = await generateRootWithKeys(b);
  await activate('dr', c, 'dr-c');
}, 450_000);

afterAll(async () => {
  await Promise.all([a, b, c].map((server) => server?.topology.stop()));
});

test('the status shows the log on the primary and streaming on both secondaries', async () => {
  const primary = await status(a, 'performance');
  expect(primary).toMatchObject({ last_wal: expect.any(Number), merkle_root: expect.stringMatching(/^[0-9a-f]{64}$/), corrupted_merkle_tree: false, last_corruption_check_epoch: '' });
  expect(primary.last_wal).toBeGreaterThan(0);
  await eventually(async () => (await status(b, 'performance')).state === 'stream-wals' && (await status(c, 'dr')).state === 'stream-wals', REPLICATED_MS);
  expect(await status(b, 'performance')).toMatchObject({ last_remote_wal: expect.any(Number), merkle_root: expect.stringMatching(/^[0-9a-f]{64}$/) });
}, RESYNC_TEST_MS);

test('data written before and after activation reaches both secondaries: KV, policies, mounts', async () => {
  await replicated(B.call, 'kv/before-activation', 'old');
  await A.ok('PUT', 'kv/after', { value: 'new' });
  await A.ok('PUT', 'sys/policies/acl/readers', { policy: 'path "kv/*" { capabilities = ["read"] }' });
  await A.ok('POST', 'sys/mounts/second', { type: 'kv' });
  await A.ok('PUT', 'second/x', { value: 'in a new mount' });
  await replicated(B.call, 'kv/after', 'new');
  await replicated(B.call, 'second/x', 'in a new mount');
  await eventually(async () => (await B.call('GET', 'sys/policies/acl/readers')).status === 200, REPLICATED_MS);
  await reachedDr();
  // The values travelled as barrier ciphertext: B reads them with the keyring A handed it.
  const mounts = await B.ok('GET', 'sys/mounts');
  expect(Object.keys(mounts.data)).toEqual(expect.arrayContaining(['kv/', 'second/']));
});

test('a deletion on the primary is applied on the secondaries', async () => {
  await A.ok('PUT', 'kv/doomed', { value: 'soon gone' });
  await replicated(B.call, 'kv/doomed', 'soon gone');
  await A.ok('DELETE', 'kv/doomed');
  await eventually(async () => (await B.call('GET', 'kv/doomed')).status === 404, REPLICATED_MS);
  await reachedDr();
});

test('a local mount reaches the DR secondary, not the performance one; tokens stay on their cluster', async () => {
  await A.ok('POST', 'sys/mounts/here', { type: 'kv', local: true });
  await A.ok('PUT', 'here/x', { value: 'local data' });
  await A.ok('PUT', 'kv/marker-local', { value: 'after the local write' });
  await reachedDr();
  await replicated(B.call, 'kv/marker-local', 'after the local write');
  expect((await B.call('GET', 'here/x')).status).toBe(404);
  expect(Object.keys((await B.ok('GET', 'sys/mounts')).data)).not.toContain('here/');

  // B's own local mount is made and served on B; the primary's mount table changing afterwards leaves it there.
  await B.ok('POST', 'sys/mounts/b-local', { type: 'kv', local: true });
  await B.ok('PUT', 'b-local/x', { value: 'kept on B' });
  await A.ok('POST', 'sys/mounts/after-b-local', { type: 'kv' });
  await A.ok('PUT', 'after-b-local/x', { value: 'mounted after B made its own' });
  await replicated(B.call, 'after-b-local/x', 'mounted after B made its own');
  expect((await B.ok('GET', 'b-local/x')).data).toEqual({ value: 'kept on B' });
  expect(Object.keys((await B.ok('GET', 'sys/mounts')).data)).toEqual(expect.arrayContaining(['b-local/', 'after-b-local/']));
  expect(Object.keys((await A.ok('GET', 'sys/mounts')).data)).not.toContain('b-local/');

  const made = await A.ok('POST', 'auth/token/create', { policies: ['default'] });
  await A.ok('PUT', 'kv/marker-token', { value: 'after the token' });
  await replicated(B.call, 'kv/marker-token', 'after the token');
  expect((await api(b.url, 'GET', '/v1/auth/token/lookup-self', { token: made.auth.client_token })).status).toBe(403);
  expect((await api(b.url, 'GET', '/v1/auth/token/lookup-self', { token: a.root })).status).toBe(403);
});

test('a keyring rotation on the primary reaches the secondaries with the next write', async () => {
  await A.ok('PUT', 'sys/rotate');
  await A.ok('PUT', 'kv/rotated', { value: 'under the new term' });
  await replicated(B.call, 'kv/rotated', 'under the new term');
  await reachedDr();
  const term = (await A.ok('GET', 'sys/key-status')).data.term;
  expect((await B.ok('GET', 'sys/key-status')).data.term).toBe(term);
});

test('a secondary stopped while more than the buffer was written resynchronizes, then streams; the Merkle roots agree', async () => {
  await b.topology.stopProcess('all-in-one');
  for (let i = 0; i < BUFFER_LENGTH * 2; i++) await A.ok('PUT', `kv/while-away-${i}`, { value: `v${i}` });
  await A.ok('DELETE', 'kv/after');
  await b.topology.restartProcess('all-in-one');
  b.url = b.topology.urls[0];
  for (const key of b.keys) await api(b.url, 'PUT', '/v1/sys/unseal', { body: { key } });

  await replicated(B.call, `kv/while-away-${BUFFER_LENGTH * 2 - 1}`, `v${BUFFER_LENGTH * 2 - 1}`);
  await replicated(B.call, 'kv/while-away-0', 'v0');
  expect((await B.call('GET', 'kv/after')).status).toBe(404);
  // Each round's keys are readable as soon as it is applied; the resync ends (and says so) after the last.
  await eventually(async () => b.topology.processes[0].logs.some((line) => line.includes('replication resynchronized by merkle diff and sync')), REPLICATED_MS);

  await A.ok('PUT', 'kv/after-resync', { value: 'streamed' });
  await replicated(B.call, 'kv/after-resync', 'streamed');
  let primaryRoot = '';
  await eventually(async () => {
    const [primary, secondary] = [await status(a, 'performance'), await status(b, 'performance')];
    primaryRoot = primary.merkle_root;
    return secondary.state === 'stream-wals' && secondary.merkle_root === primary.merkle_root;
  }, REPLICATED_MS);
  expect((await status(c, 'dr')).merkle_root).toBeDefined();
  await eventually(async () => (await status(c, 'dr')).merkle_root === primaryRoot, REPLICATED_MS);
}, RESYNC_TEST_MS);

test('a deny paths filter keeps a mount\'s data from the performance secondary, from the moment it is set until it is removed', async () => {
  await A.ok('POST', 'sys/mounts/denied', { type: 'kv' });
  await A.ok('PUT', 'denied/early', { value: 'shipped before the filter' });
  await replicated(B.call, 'denied/early', 'shipped before the filter');
  await A.ok('PUT', 'sys/replication/performance/primary/paths-filter/perf-b', { mode: 'deny', paths: ['denied/'] });
  await A.ok('PUT', 'denied/x', { value: 'kept from B' });
  await A.ok('PUT', 'kv/marker-filter', { value: 'after the filtered write' });
  await replicated(B.call, 'kv/marker-filter', 'after the filtered write');
  expect((await B.call('GET', 'denied/x')).status).toBe(404);
  // What B held of the mount before goes once B hears of the filter (a heartbeat) and resynchronizes.
  await eventually(async () => (await B.call('GET', 'denied/early')).status === 404, REPLICATED_MS);
  // The DR secondary has no filter: it applies every entry.
  await reachedDr();

  // Without the filter, what was kept from B reaches it, the writes made meanwhile among it.
  await A.ok('DELETE', 'sys/replication/performance/primary/paths-filter/perf-b');
  await replicated(B.call, 'denied/x', 'kept from B');
  await replicated(B.call, 'denied/early', 'shipped before the filter');
}, RESYNC_TEST_MS);
