/**
 * Issue 19: failover and failback of DR replication (Document 3). Two all-in-one servers with
 * their own embedded storage: A is the DR primary, C its DR secondary. A is killed (SIGKILL) after
 * its writes reached C; C is promoted with a DR operation token made from A's shares and serves
 * A's data; A comes back, is demoted and joins C as its DR secondary with a new activation token,
 * and converges to C's data.
 */
import {
  api,
  drOperationToken,
  eventually,
  replicationCalls,
  replicationStatus,
  startReplicationServer,
  unsealReplicationServer,
  type ReplicationServer,
} from '@svc/testing';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

/** Heartbeats come every 2 s and a silent peer shows disconnected after 10 s; streaming polls. Generous: the machine is shared. */
const LINK_TIMEOUT_MS = 60_000;
const SECRETS = 40;

let a: ReplicationServer;
let c: ReplicationServer;
const A = replicationCalls(() => a);
const C = replicationCalls(() => c);
const status = replicationStatus;

beforeAll(async () => {
  a = await startReplicationServer();
  c = await startReplicationServer();
}, 300_000);

afterAll(async () => {
  await Promise.all([a, c].map((server) => server?.topology.stop()));
});

/** Waits until the secondary has applied the primary's log as far as it stands now, and both Merkle roots agree. */
async function caughtUp(primary: ReplicationServer, secondary: ReplicationServer): Promise<void> {
  await eventually(async () => {
    const [from, to] = await Promise.all([status(primary, 'dr'), status(secondary, 'dr')]);
    return to.state === 'stream-wals' && to.last_remote_wal >= from.last_wal && to.merkle_root === from.merkle_root;
  }, LINK_TIMEOUT_MS, 250);
}

let drToken = '';

test('A is the DR primary, C its secondary; every write acknowledged on A reaches C', async () => {
  await A.ok('PUT', 'sys/replication/dr/primary/enable', {});
  const made = await A.ok('PUT', 'sys/replication/dr/primary/secondary-token', { id: 'dr-c' });
  await C.ok('PUT', 'sys/replication/dr/secondary/enable', { token: made.wrap_info.token });
  for (let i = 0; i < SECRETS; i++) await A.ok('PUT', `secret/failover/${i}`, { value: `v${i}` });
  // A DR secondary receives local mounts too (a performance secondary would not).
  await A.ok('POST', 'sys/mounts/here', { type: 'kv', local: true });
  await A.ok('PUT', 'here/local', { value: 'local to A' });
  await caughtUp(a, c);
});

test('A is killed; a DR operation token from A\'s shares promotes C, which serves every acknowledged write', async () => {
  a.topology.processes[0].child.kill('SIGKILL');
  await eventually(async () => (await status(c, 'dr')).primaries[0]?.connection_status === 'disconnected', LINK_TIMEOUT_MS, 250);
  await C.refused('GET', `secret/failover/0`, undefined, 400, /DR secondary/);

  drToken = await drOperationToken(c, a.keys);
  // A is gone: the safety check passes without force.
  const promoted = await C.ok('PUT', 'sys/replication/dr/secondary/promote', { dr_operation_token: drToken }, '');
  expect(promoted).toMatchObject({ complete: true });
  expect(await status(c, 'dr')).toMatchObject({ mode: 'primary', known_secondaries: [] });

  // C holds A's data, tokens included: A's root token works on it.
  c.root = a.root;
  for (let i = 0; i < SECRETS; i++) expect((await C.ok('GET', `secret/failover/${i}`)).data).toEqual({ value: `v${i}` });
  expect((await C.ok('GET', 'here/local')).data).toEqual({ value: 'local to A' });
  expect((await api(c.url, 'GET', '/v1/sys/health')).status).toBe(200);
  await C.ok('PUT', 'secret/after-failover', { value: 'written on C' });
  // C is a primary now: the DR operation token went with its secondary mode.
  await C.refused('PUT', 'sys/replication/dr/secondary/operation-token/delete', { dr_operation_token: drToken }, 400, /not a DR secondary/);
});

test('A comes back, is demoted and rejoins as C\'s DR secondary with a new token; it converges to C\'s data', async () => {
  await a.topology.restartProcess('all-in-one');
  a.url = a.topology.urls[0];
  await unsealReplicationServer(a);
  // Still a primary of its own (stale) set until demoted.
  expect(await status(a, 'dr')).toMatchObject({ mode: 'primary' });
  await A.ok('PUT', 'sys/replication/dr/primary/demote');
  expect(await status(a, 'dr')).toMatchObject({ mode: 'secondary', state: 'idle' });
  await A.refused('GET', 'secret/failover/0', undefined, 400, /DR secondary/);

  // A demoted primary's shares were its set's primary's: A's own make its DR operation token.
  const onA = await drOperationToken(a, a.keys);
  const update = 'sys/replication/dr/secondary/update-primary';
  const made = await C.ok('PUT', 'sys/replication/dr/primary/secondary-token', { id: 'dr-a' });
  await A.refused('PUT', update, { token: made.wrap_info.token }, 400, /missing required field "dr_operation_token"/);
  await A.refused('PUT', update, { token: made.wrap_info.token, dr_operation_token: 'svd.wrong' }, 403, /permission denied/);
  await A.refused('PUT', update, { update_primary_addrs: ['https://127.0.0.1:1'], dr_operation_token: onA }, 400, /not allowed in DR mode/);
  await A.ok('PUT', update, { token: made.wrap_info.token, dr_operation_token: onA }, '');
  await caughtUp(c, a);
  expect(await status(a, 'dr')).toMatchObject({ mode: 'secondary', secondary_id: 'dr-a', cluster_id: (await status(c, 'dr')).cluster_id });

  // From now on A's DR operation tokens take its new primary's (C's) shares, not its own.
  const attempt = await A.ok('PUT', 'sys/replication/dr/secondary/generate-operation-token/attempt', {}, '');
  await A.refused('PUT', 'sys/replication/dr/secondary/generate-operation-token/update', { key: a.keys[0], nonce: attempt.nonce }, 400, /do not form the primary's unseal key/);
  await A.ok('DELETE', 'sys/replication/dr/secondary/generate-operation-token/attempt', undefined, '');

  // Every DR secondary operation takes the token: missing is a 400 naming it, unknown a 403.
  for (const operation of ['promote', 'disable', 'reindex', 'merkle-check', 'operation-token/delete']) {
    await A.refused('PUT', `sys/replication/dr/secondary/${operation}`, {}, 400, /missing required field "dr_operation_token"/);
    await A.refused('PUT', `sys/replication/dr/secondary/${operation}`, { dr_operation_token: 'svd.unknown' }, 403, /permission denied/);
  }
  const check = await A.ok('PUT', 'sys/replication/dr/secondary/merkle-check', { dr_operation_token: onA }, '');
  expect(check.data.merkle_corruption_report).toMatchObject({ corrupted_root: false });
  await A.ok('PUT', 'sys/replication/dr/secondary/reindex', { dr_operation_token: onA, force: true }, '');

  await A.ok('PUT', 'sys/replication/dr/secondary/operation-token/delete', { dr_operation_token: onA }, '');
  await A.refused('PUT', 'sys/replication/dr/secondary/disable', { dr_operation_token: onA }, 403, /permission denied/);
});

test('failback: C is demoted, A promoted with C\'s shares, and A serves what was written on C', async () => {
  await C.ok('PUT', 'sys/replication/dr/primary/demote');
  const token = await drOperationToken(a, c.keys);
  await eventually(async () => (await status(a, 'dr')).primaries[0]?.connection_status === 'disconnected', LINK_TIMEOUT_MS, 250);
  await A.ok('PUT', 'sys/replication/dr/secondary/promote', { dr_operation_token: token }, '');
  expect((await A.ok('GET', 'secret/after-failover')).data).toEqual({ value: 'written on C' });
  expect((await A.ok('GET', `secret/failover/${SECRETS - 1}`)).data).toEqual({ value: `v${SECRETS - 1}` });
});

test('an activation token older than its ttl is refused', async () => {
  const made = await A.ok('PUT', 'sys/replication/dr/primary/secondary-token', { id: 'short-lived', ttl: '1s' });
  // The wrapping token's expiry, polled: the primary refuses it once its ttl has passed.
  await eventually(async () => (await api(a.url, 'POST', '/v1/sys/wrapping/lookup', { token: made.wrap_info.token })).status !== 200, 30_000, 250);
  // C, demoted, takes its own shares (they were its set's primary's).
  const token = await drOperationToken(c, c.keys);
  await C.refused('PUT', 'sys/replication/dr/secondary/update-primary', { token: made.wrap_info.token, dr_operation_token: token }, 400, /refused the activation token/);
});

test('every replication endpoint but the status ones is refused outside the root namespace', async () => {
  await A.ok('POST', 'sys/namespaces/team');
  const endpoints: [string, string][] = [
    ...['performance', 'dr'].flatMap((mode): [string, string][] => [
      ['PUT', `${mode}/primary/enable`],
      ['PUT', `${mode}/primary/demote`],
      ['PUT', `${mode}/primary/disable`],
      ['PUT', `${mode}/primary/secondary-token`],
      ['PUT', `${mode}/primary/revoke-secondary`],
      ['PUT', `${mode}/secondary/generate-public-key`],
      ['PUT', `${mode}/secondary/enable`],
      ['PUT', `${mode}/secondary/promote`],
      ['PUT', `${mode}/secondary/disable`],
      ['PUT', `${mode}/secondary/update-primary`],
    ]),
    ['PUT', 'performance/primary/paths-filter/x'],
    ['GET', 'performance/primary/paths-filter/x'],
    ['DELETE', 'performance/primary/paths-filter/x'],
    ['GET', 'performance/primary/dynamic-filter/x'],
    ['GET', 'performance/secondary/dynamic-filter/x'],
    ['GET', 'dr/secondary/generate-operation-token/attempt'],
    ['PUT', 'dr/secondary/generate-operation-token/attempt'],
    ['DELETE', 'dr/secondary/generate-operation-token/attempt'],
    ['PUT', 'dr/secondary/generate-operation-token/update'],
    ['PUT', 'dr/secondary/operation-token/delete'],
    ['PUT', 'dr/secondary/reindex'],
    ['PUT', 'dr/secondary/merkle-check'],
  ];
  for (const [method, path] of endpoints) {
    const res = await api<Body>(a.url, method, `/v1/sys/replication/${path}`, { token: a.root, body: method === 'GET' ? undefined : {}, headers: { 'x-service-namespace': 'team' } });
    expect([method, path, res.status, (res.body?.errors ?? []).join()]).toEqual([method, path, 400, expect.stringMatching(/root namespace/)]);
  }
});
