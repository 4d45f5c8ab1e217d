/**
 * Issue 19, replication part 2: clusters and activation (Document 3). Three all-in-one servers,
 * each with its own embedded storage, API port and cluster listener: A is the performance and DR
 * primary, B its performance secondary (activated by a response-wrapped token), C its DR
 * secondary (activated by a token encrypted to C's public key). The cluster link is mutual TLS
 * with certificates A's cluster CA issued; heartbeats show on both sides.
 */
import { decrypt, generateKey, readMessage } from 'openpgp';
import { decodeOtpToken } from '@svc/sdk';
import { api, eventually, generateRootWithKeys, initAndUnseal, replicationCalls, replicationStatus, REPLICATION_LISTENER as LISTENER, startReplicationServer, startTopology, type ReplicationServer } from '@svc/testing';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

/** Heartbeats come every 2 s: a change of connection shows within a few of them. */
const LINK_TIMEOUT_MS = 30_000;

type Server = ReplicationServer;
const startServer = () => startReplicationServer();
const at = replicationCalls;
const status = replicationStatus;
const generateRoot = (server: Server) => generateRootWithKeys(server);

function jwtClaims(token: string): Body {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8')) as Body;
}

let a: Server;
let b: Server;
let c: Server;
const A = at(() => a);
const B = at(() => b);
const C = at(() => c);

// One at a time: creating embedded storage is the slow part of a start, and three at once on a
// loaded two-core machine can each take longer than the harness waits.
beforeAll(async () => {
  a = await startServer();
  b = await startServer();
  c = await startServer();
}, 450_000);

afterAll(async () => {
  await Promise.all([a, b, c].map((server) => server?.topology.stop()));
});

test('status is unauthenticated in both modes and shows a disabled cluster', async () => {
  expect(await status(a, 'performance')).toEqual({ mode: 'disabled' });
  expect(await status(a, 'dr')).toEqual({ mode: 'disabled' });
});

test('bad input, a non-root token and another namespace are refused', async () => {
  await A.refused('PUT', 'sys/replication/performance/primary/enable', { primary_cluster_addr: 'not an address' }, 400, /primary_cluster_addr must be a cluster address/);
  await A.refused('PUT', 'sys/replication/performance/primary/secondary-token', { id: 'x' }, 400, /not a performance primary/);
  await A.refused('PUT', 'sys/replication/dr/secondary/enable', {}, 400, /missing required field "token"/);
  await A.refused('PUT', 'sys/replication/dr/secondary/enable', { token: 'garbage' }, 400, /generate-public-key/);
  await A.refused('PUT', 'sys/replication/performance/primary/paths-filter/x', { mode: 'allow', paths: [] }, 400, /not a performance primary/);

  const user = await A.ok('POST', 'auth/token/create', { policies: ['default'] });
  const asUser = await A.call('PUT', 'sys/replication/performance/primary/enable', {}, user.auth.client_token);
  expect(asUser.status).toBe(403);

  await A.ok('POST', 'sys/namespaces/team');
  const inNamespace = await api<Body>(a.url, 'PUT', '/v1/sys/replication/performance/primary/enable', { token: a.root, body: {}, headers: { 'x-service-namespace': 'team' } });
  expect(inNamespace.status).toBe(400);
  expect(inNamespace.body.errors.join()).toMatch(/root namespace/);
});

describe('performance replication', () => {
  let clusterId: string;

  test('enable primary gives a cluster id; a wrapped activation token carries the primary API address', async () => {
    await A.ok('PUT', 'sys/replication/performance/primary/enable', {});
    const primary = await status(a, 'performance');
    expect(primary).toMatchObject({ mode: 'primary', known_secondaries: [], secondaries: [], primary_cluster_addr: '' });
    clusterId = primary.cluster_id;
    expect(clusterId).toMatch(/^[0-9a-f-]{36}$/);

    await A.refused('PUT', 'sys/replication/performance/primary/secondary-token', {}, 400, /missing required field "id"/);
    await A.refused('PUT', 'sys/replication/performance/primary/secondary-token', { id: 'b', ttl: 'soon' }, 400, /ttl/);
    await A.refused('PUT', 'sys/replication/performance/primary/secondary-token', { id: 'b', secondary_public_key: 'bm90IGEga2V5' }, 400, /secondary_public_key/);
  });

  test('enable secondary wipes its storage; both sides see the link connected with heartbeats', async () => {
    const made = await A.ok('PUT', 'sys/replication/performance/primary/secondary-token', { id: 'perf-b', ttl: '10m' });
    const info = made.wrap_info;
    expect(info).toMatchObject({ ttl: 600, accessor: expect.any(String), creation_time: expect.any(String) });
    expect(jwtClaims(info.token)).toMatchObject({ addr: a.url, type: 'wrapping', accessor: info.accessor });
    // The JWT-form token is a wrapping token at the primary: its lookup shows the TTL.
    const lookup = await api<Body>(a.url, 'POST', '/v1/sys/wrapping/lookup', { token: info.token });
    expect([lookup.status, lookup.body.data?.creation_ttl]).toEqual([200, 600]);
    const forged = `${info.token.split('.').slice(0, 2).join('.')}.${Buffer.from('forged').toString('base64url')}`;
    expect((await api(a.url, 'POST', '/v1/sys/wrapping/lookup', { token: forged })).status).toBe(403);

    await B.ok('PUT', 'secret/before-activation', { value: 'wiped' });
    await B.refused('PUT', 'sys/replication/dr/secondary/enable', { token: info.token }, 400, /for performance replication, not DR/);
    await B.ok('PUT', 'sys/replication/performance/secondary/enable', { token: info.token });

    // The wipe took B's tokens with its data.
    expect((await B.call('GET', 'auth/token/lookup-self')).status).toBe(403);
    b.root = await generateRoot(b);
    expect((await B.call('GET', 'secret/before-activation')).status).toBe(404);

    const secondary = await status(b, 'performance');
    expect(secondary).toMatchObject({
      mode: 'secondary',
      cluster_id: clusterId,
      secondary_id: 'perf-b',
      primary_cluster_addr: expect.stringMatching(/^https:\/\/127\.0\.0\.1:\d+$/),
      primaries: [{ api_address: a.url, cluster_address: expect.any(String) }],
    });
    expect(secondary.known_primary_cluster_addrs).toEqual([secondary.primary_cluster_addr]);
    let primarySide: Body = {};
    let secondarySide: Body = {};
    await eventually(async () => {
      primarySide = await status(a, 'performance');
      secondarySide = await status(b, 'performance');
      return primarySide.secondaries[0]?.connection_status === 'connected' && secondarySide.primaries[0].connection_status === 'connected';
    }, LINK_TIMEOUT_MS);
    expect(primarySide).toMatchObject({ known_secondaries: ['perf-b'], secondaries: [{ api_address: b.url, node_id: expect.any(String) }] });
    expect(Date.parse(primarySide.secondaries[0].last_heartbeat)).not.toBeNaN();
    expect(Date.parse(secondarySide.primaries[0].last_heartbeat)).not.toBeNaN();
    expect(secondarySide.state).toMatch(/^(stream-wals|merkle-diff|merkle-sync)$/);

    // The token was used once: a second cluster cannot take it.
    await C.refused('PUT', 'sys/replication/performance/secondary/enable', { token: info.token }, 400, /refused the activation token/);
    await A.refused('PUT', 'sys/replication/performance/primary/secondary-token', { id: 'perf-b' }, 400, /already exists/);
  });

  test('paths filter CRUD with validation, and the dynamic filter on both sides', async () => {
    const where = 'sys/replication/performance/primary/paths-filter/perf-b';
    await A.refused('PUT', where, { mode: 'maybe', paths: [] }, 400, /mode/);
    await A.refused('PUT', where, { mode: 'deny', paths: ['../etc'] }, 400, /paths\[0\]/);
    await A.refused('PUT', where, { mode: 'deny', paths: [7] }, 400, /paths\[0\] must be a string/);
    await A.ok('PUT', where, { mode: 'deny', paths: ['secret', 'team/'] });
    expect((await A.ok('GET', where)).data).toEqual({ mode: 'deny', paths: ['secret/', 'team/'] });

    const primaryView = await A.ok('GET', 'sys/replication/performance/primary/dynamic-filter/perf-b');
    expect(primaryView.data).toEqual({ dynamic_filtered_mounts: ['secret/'], dynamic_filtered_namespaces: ['team/'] });
    await eventually(async () => {
      const secondaryView = await B.call('GET', 'sys/replication/performance/secondary/dynamic-filter/perf-b');
      return secondaryView.status === 200 && secondaryView.body.data.dynamic_filtered_mounts.includes('secret/');
    }, LINK_TIMEOUT_MS);

    await A.ok('DELETE', where);
    expect((await A.call('GET', where)).status).toBe(404);
  });

  test('update-primary: token and addresses are exclusive; an address that answers becomes the primary', async () => {
    const where = 'sys/replication/performance/secondary/update-primary';
    const { primary_cluster_addr: addr } = await status(b, 'performance');
    await B.refused('PUT', where, { token: 'x', update_primary_addrs: [addr] }, 400, /mutually exclusive/);
    await B.refused('PUT', where, {}, 400, /either token or update_primary_addrs/);
    await B.refused('PUT', where, { update_primary_addrs: ['ftp://x'] }, 400, /update_primary_addrs\[0\]/);
    await B.refused('PUT', where, { update_primary_addrs: ['https://127.0.0.1:1'] }, 400, /no address/);
    await B.ok('PUT', where, { update_primary_addrs: ['https://127.0.0.1:1', addr] });
    expect(await status(b, 'performance')).toMatchObject({ primary_cluster_addr: addr, known_primary_cluster_addrs: ['https://127.0.0.1:1', addr] });
  });

  test('revoke-secondary disconnects the secondary at once and its certificate is refused after', async () => {
    await A.refused('PUT', 'sys/replication/performance/primary/revoke-secondary', {}, 400, /missing required field "id"/);
    await A.ok('PUT', 'sys/replication/performance/primary/revoke-secondary', { id: 'perf-b' });
    expect(await status(a, 'performance')).toMatchObject({ known_secondaries: [], secondaries: [] });
    await eventually(async () => (await status(b, 'performance')).primaries[0].connection_status === 'disconnected', LINK_TIMEOUT_MS);
    await eventually(async () => a.topology.processes[0].logs.some((line) => line.includes('cluster connection refused') && line.includes('"secondary_id":"perf-b"')), LINK_TIMEOUT_MS);
  });

  test('demote keeps the cluster id; disable and enable again makes a new one', async () => {
    await A.ok('PUT', 'sys/replication/performance/primary/demote');
    expect(await status(a, 'performance')).toMatchObject({ mode: 'secondary', cluster_id: clusterId, secondary_id: '', state: 'idle', primaries: [] });
    await A.refused('PUT', 'sys/replication/performance/primary/disable', {}, 400, /not a performance primary/);
    await A.ok('PUT', 'sys/replication/performance/secondary/disable');
    expect(await status(a, 'performance')).toEqual({ mode: 'disabled' });
    await A.ok('PUT', 'sys/replication/performance/primary/enable', { primary_cluster_addr: 'https://lb.example.com:8201' });
    const again = await status(a, 'performance');
    expect(again).toMatchObject({ mode: 'primary', primary_cluster_addr: 'https://lb.example.com:8201' });
    expect(again.cluster_id).not.toBe(clusterId);
    await A.ok('PUT', 'sys/replication/performance/primary/disable');
    expect(await status(a, 'performance')).toEqual({ mode: 'disabled' });
  });
});

describe('DR replication', () => {
  let drToken: string;

  test('a token encrypted to the secondary\'s public key activates a DR secondary', async () => {
    await A.ok('PUT', 'sys/replication/dr/primary/enable', {});
    const { cluster_id: clusterId } = await status(a, 'dr');
    const key = (await C.ok('PUT', 'sys/replication/dr/secondary/generate-public-key')).data.secondary_public_key;
    const made = await A.ok('PUT', 'sys/replication/dr/primary/secondary-token', { id: 'dr-c', secondary_public_key: key });
    expect(made.wrap_info).toBeNull();
    await C.ok('PUT', 'sys/replication/dr/secondary/enable', { token: made.data.token });
    c.root = ''; // gone with the wipe
    await eventually(async () => (await status(c, 'dr')).primaries[0]?.connection_status === 'connected', LINK_TIMEOUT_MS);
    expect(await status(c, 'dr')).toMatchObject({ mode: 'secondary', cluster_id: clusterId, secondary_id: 'dr-c' });
    // A DR secondary serves no client requests; its own calls need a DR operation token.
    await C.refused('GET', 'auth/token/lookup-self', undefined, 400, /DR secondary/);
    await C.refused('GET', 'sys/mounts', undefined, 400, /until it is promoted/);
    const health = await api<Body>(c.url, 'GET', '/v1/sys/health');
    expect([health.status, health.body.replication_dr_mode, health.body.replication_performance_mode]).toEqual([472, 'secondary', 'disabled']);
    expect((await api(c.url, 'GET', '/v1/sys/health?drsecondarycode=200')).status).toBe(200);
    expect(await C.ok('GET', 'sys/seal-status', undefined, '')).toMatchObject({ sealed: false, replication_dr_mode: 'secondary', replication_performance_mode: 'disabled' });
    expect((await api<Body>(a.url, 'GET', '/v1/sys/health')).body).toMatchObject({ replication_dr_mode: 'primary' });
    await C.refused('PUT', 'sys/replication/dr/secondary/promote', {}, 400, /missing required field "dr_operation_token"/);
    await C.refused('PUT', 'sys/replication/dr/secondary/promote', { dr_operation_token: 'svd.not-a-token' }, 403, /permission denied/);
  });

  test('DR operation token generation with the primary\'s shares (the secondary\'s own are refused): OTP, then PGP; delete', async () => {
    const where = 'sys/replication/dr/secondary/generate-operation-token';
    await C.refused('PUT', `${where}/update`, { key: a.keys[0], nonce: 'none' }, 400, /no DR operation token generation is in progress/);
    const attempt = await C.ok('PUT', `${where}/attempt`, {}, '');
    expect(attempt).toMatchObject({ started: true, progress: 0, required: 1, complete: false, otp_length: attempt.otp.length });
    expect((await C.ok('GET', `${where}/attempt`, undefined, '')).otp).toBe('');
    await C.refused('PUT', `${where}/update`, { key: a.keys[0], nonce: 'wrong' }, 400, /nonce/);
    await C.refused('PUT', `${where}/update`, { key: c.keys[0], nonce: attempt.nonce }, 400, /do not form the primary's unseal key/);
    const done = await C.ok('PUT', `${where}/update`, { key: a.keys[0], nonce: attempt.nonce }, '');
    expect(done).toMatchObject({ complete: true, progress: 1 });
    drToken = decodeOtpToken(done.encoded_token, attempt.otp);
    expect(drToken).toMatch(/^svd\./);

    const operator = await generateKey({ type: 'ecc', curve: 'curve25519Legacy', userIDs: [{ name: 'operator' }], format: 'object' });
    const pgp = await C.ok('PUT', `${where}/attempt`, { pgp_key: Buffer.from(operator.publicKey.write()).toString('base64') }, '');
    expect(pgp).toMatchObject({ otp: '', pgp_fingerprint: operator.publicKey.getFingerprint() });
    await C.refused('PUT', `${where}/attempt`, {}, 400, /already in progress/);
    const encrypted = await C.ok('PUT', `${where}/update`, { key: a.keys[0], nonce: pgp.nonce }, '');
    const message = await readMessage({ binaryMessage: Buffer.from(encrypted.encoded_token, 'base64') });
    const pgpToken = (await decrypt({ message, decryptionKeys: operator.privateKey })).data as string;
    expect(pgpToken).toMatch(/^svd\./);

    await C.ok('PUT', 'sys/replication/dr/secondary/operation-token/delete', { dr_operation_token: pgpToken }, '');
    await C.refused('PUT', 'sys/replication/dr/secondary/operation-token/delete', { dr_operation_token: pgpToken }, 403, /permission denied/);
    // The attempt endpoints are a DR secondary's: the primary has none.
    await A.refused('GET', `${where}/attempt`, undefined, 400, /not a DR secondary/);
  });

  test('DR rules of update-primary; promote is refused while the primary answers, unless forced', async () => {
    const update = 'sys/replication/dr/secondary/update-primary';
    await C.refused('PUT', update, { update_primary_addrs: ['https://127.0.0.1:1'], dr_operation_token: drToken }, 400, /not allowed in DR mode/);
    await C.refused('PUT', update, { token: 'x', update_primary_addrs: ['https://127.0.0.1:1'], dr_operation_token: drToken }, 400, /mutually exclusive/);
    const { cluster_id: clusterId } = await status(c, 'dr');
    await eventually(async () => (await status(c, 'dr')).primaries[0].connection_status === 'connected', LINK_TIMEOUT_MS);
    await C.refused('PUT', 'sys/replication/dr/secondary/promote', { dr_operation_token: drToken }, 400, /primary is still reachable/);
    const promoted = await C.ok('PUT', 'sys/replication/dr/secondary/promote', { dr_operation_token: drToken, force: true }, '');
    expect(promoted).toMatchObject({ complete: true, data: { complete: true } });
    expect(await status(c, 'dr')).toMatchObject({ mode: 'primary', cluster_id: clusterId, known_secondaries: [] });
    await A.ok('PUT', 'sys/replication/dr/primary/disable');
  });
});

describe('a distributed primary', () => {
  let d: Server;
  const D = at(() => d);
  /** The second gateway of the same cluster. */
  const D2 = at(() => ({ url: d.topology.urls[1], root: d.root }));

  beforeAll(async () => {
    // Two replication services: one holds the cluster's replication lease, the other stands by.
    const topology = await startTopology('distributed', { listeners: [LISTENER], gateways: 2, services: ['replication', 'replication'] });
    const { rootToken, keys } = await initAndUnseal(topology.urls[0]);
    d = { topology, url: topology.urls[0], keys, root: rootToken };
  }, 300_000);

  afterAll(() => d?.topology.stop());

  /** B leaves the primary it has and becomes D's secondary `id`; resolves once both see the link. Returns the activation token's answer. */
  async function joinD(id: string): Promise<Body> {
    const made = await D.ok('PUT', 'sys/replication/performance/primary/secondary-token', { id });
    await B.ok('PUT', 'sys/replication/performance/secondary/disable');
    await B.ok('PUT', 'sys/replication/performance/secondary/enable', { token: made.wrap_info.token });
    b.root = await generateRoot(b);
    await eventually(async () => {
      const [primary, secondary] = await Promise.all([status(d, 'performance'), status(b, 'performance')]);
      return primary.secondaries[0]?.connection_status === 'connected' && secondary.primaries[0]?.connection_status === 'connected';
    }, LINK_TIMEOUT_MS);
    return made;
  }

  test('two gateways over PostgreSQL and NATS and the replication service activate a secondary, see its heartbeats and revoke it', async () => {
    // Enabled through one gateway, reported alike by both: the replication service owns the cluster listener.
    await D2.ok('PUT', 'sys/replication/performance/primary/enable', {});
    const { cluster_id: clusterId } = await status(d, 'performance');
    expect(await status({ url: d.topology.urls[1] }, 'performance')).toMatchObject({ mode: 'primary', cluster_id: clusterId });
    // B leaves its first primary (revoked earlier) and joins this one.
    const made = await joinD('perf-b2');
    expect(jwtClaims(made.wrap_info.token).addr).toBe(d.url);
    expect(await status(b, 'performance')).toMatchObject({ cluster_id: clusterId, secondary_id: 'perf-b2', primaries: [{ api_address: d.url }] });
    expect((await status({ url: d.topology.urls[1] }, 'performance')).secondaries).toEqual([expect.objectContaining({ connection_status: 'connected' })]);

    await D2.ok('PUT', 'sys/replication/performance/primary/revoke-secondary', { id: 'perf-b2' });
    await eventually(async () => (await status(b, 'performance')).primaries[0].connection_status === 'disconnected', LINK_TIMEOUT_MS);
  });

  test('when the replication service that owns the replication stops, the one standing by takes over: status, activation and heartbeats go on', async () => {
    const services = d.topology.processes.filter((process) => process.name.startsWith('replication'));
    const owning = services.filter((process) => process.logs.some((line) => line.includes('replication lease taken')));
    expect(owning).toHaveLength(1);
    const { cluster_id: clusterId } = await status(d, 'performance');
    await d.topology.stopProcess(owning[0].name);

    const standby = services.find((process) => process !== owning[0])!;
    await eventually(async () => standby.logs.some((line) => line.includes('cluster listener started')), LINK_TIMEOUT_MS);
    // The new owner answers the gateway's calls once its takeover is complete, a moment after its
    // listener starts: until then a status read is a 503 naming the service.
    await eventually(async () => (await api(d.url, 'GET', '/v1/sys/replication/performance/status')).status === 200, LINK_TIMEOUT_MS);
    expect(await status(d, 'performance')).toMatchObject({ mode: 'primary', cluster_id: clusterId });
    // The new owner's cluster listener is another address: a secondary activated now dials it.
    await joinD('perf-b3');
  });
});
