/**
 * Issue 19, performance secondaries: A is a performance primary, B its performance secondary, each
 * all-in-one with its own embedded storage. B serves reads itself; a request that writes
 * replicated data is forwarded to A over the cluster link as the caller B authenticated, and B
 * answers once the write has come back to it (read-after-write). Tokens and leases made on B stay
 * B's. With A gone, a write on B fails at once naming the unreachable primary.
 */
import { randomBytes } from 'node:crypto';
import { api, eventually, generateRootWithKeys, replicationCalls, replicationStatus, startReplicationServer, type ReplicationServer } from '@svc/testing';
import { postgres } from './database-servers';

/** Streaming takes well under a second; a loaded two-core machine is given far more. */
const REPLICATED_MS = 60_000;

let a: ReplicationServer;
let b: ReplicationServer;
const A = replicationCalls(() => a);
const B = replicationCalls(() => b);
const suffix = randomBytes(3).toString('hex');

beforeAll(async () => {
  [a, b] = await Promise.all([startReplicationServer(), startReplicationServer()]);
  await A.ok('PUT', 'sys/replication/performance/primary/enable', {});
  await A.ok('POST', 'sys/mounts/kv', { type: 'kv' });
  const made = await A.ok('PUT', 'sys/replication/performance/primary/secondary-token', { id: 'perf-b' });
  await B.ok('PUT', 'sys/replication/performance/secondary/enable', { token: made.wrap_info.token });
  // B's storage was replaced by A's: its tokens went with it, and its own shares make a new root token.
  b.root = await generateRootWithKeys(b);
  await A.ok('PUT', 'kv/from-a', { value: 'written on A' });
  await eventually(async () => (await replicationStatus(b, 'performance')).state === 'stream-wals', REPLICATED_MS);
  await eventually(async () => (await B.call('GET', 'kv/from-a')).status === 200, REPLICATED_MS);
}, 300_000);

afterAll(async () => {
  await Promise.all([a, b].map((server) => server?.topology.stop()));
});

test('a KV write on the secondary is made on the primary and readable on the secondary right after', async () => {
  const res = await B.call('PUT', 'kv/from-b', { value: 'written on B' });
  expect([res.status, res.text]).toEqual([204, '']);
  expect(Number(res.headers['x-service-index'])).toBeGreaterThan(0);
  expect(res.headers['x-service-inconsistent']).toBeUndefined();
  // No polling: the answer waited until the write came back.
  expect((await B.ok('GET', 'kv/from-b')).data).toEqual({ value: 'written on B' });
  expect((await A.ok('GET', 'kv/from-b')).data).toEqual({ value: 'written on B' });
  await B.ok('DELETE', 'kv/from-b');
  expect((await B.call('GET', 'kv/from-b')).status).toBe(404);
  expect((await A.call('GET', 'kv/from-b')).status).toBe(404);
});

test('reads stay on the secondary: they carry no index', async () => {
  const read = await B.call('GET', 'kv/from-a');
  expect(read.headers['x-service-index']).toBeUndefined();
});

test('a policy written on the secondary lands on the primary', async () => {
  await B.ok('PUT', 'sys/policies/acl/from-b', { policy: 'path "kv/*" { capabilities = ["read"] }' });
  expect((await A.ok('GET', 'sys/policies/acl/from-b')).data.policy).toContain('kv/*');
  expect((await B.ok('GET', 'sys/policies/acl/from-b')).data.policy).toContain('kv/*');
});

test('a token made on the secondary works there and is unknown on the primary', async () => {
  const created = await B.ok('POST', 'auth/token/create', { policies: ['from-b'] });
  const token = created.auth.client_token as string;
  expect((await B.ok('GET', 'auth/token/lookup-self', undefined, token)).data.policies).toEqual(['from-b', 'default']);
  expect((await api(a.url, 'GET', '/v1/auth/token/lookup-self', { token })).status).toBe(403);
});

test('a userpass login on the secondary gives a token of the secondary; its entity is made on the primary', async () => {
  // Enabling the method and writing the user are replicated writes: both are forwarded.
  await B.ok('POST', 'sys/auth/userpass', { type: 'userpass' });
  await B.ok('PUT', 'auth/userpass/users/alice', { password: 'alice-pw', token_policies: 'from-b' });
  const login = await B.ok('PUT', 'auth/userpass/login/alice', { password: 'alice-pw' });
  const { client_token: token, entity_id: entityId } = login.auth;
  expect(entityId).toMatch(/^[0-9a-f-]{36}$/);
  expect((await B.ok('GET', 'auth/token/lookup-self', undefined, token)).data).toMatchObject({ entity_id: entityId, policies: ['from-b', 'default'] });
  expect((await api(a.url, 'GET', '/v1/auth/token/lookup-self', { token })).status).toBe(403);
  expect((await A.ok('GET', `identity/entity/id/${entityId}`)).data.id).toBe(entityId);
  // A second login finds the same entity (on B, with nothing to write).
  expect((await B.ok('PUT', 'auth/userpass/login/alice', { password: 'alice-pw' })).auth.entity_id).toBe(entityId);
});

test('a dynamic secret read on the secondary has a lease the secondary knows and the primary does not', async () => {
  await B.ok('POST', 'sys/mounts/db', { type: 'database' });
  await B.ok('POST', 'db/config/pg', { ...postgres.connection, allowed_roles: ['ro'] });
  await B.ok('POST', 'db/roles/ro', { db_name: 'pg', creation_statements: postgres.createStatements, default_ttl: '10m' });
  const creds = await B.ok('GET', 'db/creds/ro');
  expect(creds.lease_id).toMatch(/^db\/creds\/ro\//);
  expect(await postgres.userExists(creds.data.username)).toBe(true);
  expect((await B.ok('PUT', 'sys/leases/lookup', { lease_id: creds.lease_id })).data.id).toBe(creds.lease_id);
  await A.refused('PUT', 'sys/leases/lookup', { lease_id: creds.lease_id }, 400, /invalid lease/);
  await B.ok('PUT', 'sys/leases/revoke', { lease_id: creds.lease_id });
  expect(await postgres.userExists(creds.data.username)).toBe(false);
});

test('a transit key created on the secondary encrypts there at once', async () => {
  await B.ok('POST', 'sys/mounts/transit', { type: 'transit' });
  await B.ok('POST', `transit/keys/k-${suffix}`, {});
  const plaintext = Buffer.from('hello from B').toString('base64');
  const { ciphertext } = (await B.ok('POST', `transit/encrypt/k-${suffix}`, { plaintext })).data;
  expect(ciphertext).toMatch(/^vault:v1:|^svc:v1:/);
  expect((await A.ok('POST', `transit/decrypt/k-${suffix}`, { ciphertext })).data.plaintext).toBe(plaintext);
});

test('bad input is still refused with a 400 naming the field, on the secondary or by the primary', async () => {
  await B.refused('PUT', 'sys/policies/acl/broken', { policy: 'path "kv/*" { capabilities = ["fly"] }' }, 400, /fly/);
  await B.refused('POST', 'sys/mounts/nothing', { type: 'no-such-engine' }, 400, /no-such-engine/);
  await B.refused('POST', 'transit/keys/bad', { type: 'rot13' }, 400, /rot13/);
});

test('with the primary stopped, a write on the secondary fails at once naming the unreachable primary; reads still answer', async () => {
  await a.topology.stop();
  const started = Date.now();
  await B.refused('PUT', 'kv/while-a-is-down', { value: 'x' }, 503, /performance primary at .* is unreachable/);
  expect(Date.now() - started).toBeLessThan(30_000);
  expect((await B.ok('GET', 'kv/from-a')).data).toEqual({ value: 'written on A' });
});
