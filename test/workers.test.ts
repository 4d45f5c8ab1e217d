/**
 * `svc server` with two gateway workers sharing the listener, in both topologies. The primary hands
 * connections to the workers in turn, and every request here opens its own connection, so a run of
 * requests reaches every worker: what one worker changes is in force on the other when the call
 * returns, observed through behaviour alone.
 */
import { execFileSync } from 'node:child_process';
import { api, eventually, initAndUnseal, startTopology, type ApiResponse, type Topology, type TopologyKind } from '@svc/testing';

/** Enough requests, each on a new connection, that every one of the two workers serves several. */
const ROUNDS = 8;

describe.each<TopologyKind>(['all-in-one', 'distributed'])('two gateway workers, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let root: string;
  let key: string;

  const call = <T = Record<string, unknown>>(method: string, path: string, options: { token?: string; body?: unknown } = {}) =>
    api<T>(url, method, path, { ...options, headers: { connection: 'close' } });
  /** The statuses of ROUNDS requests, each on its own connection. */
  const everywhere = async (request: () => Promise<ApiResponse<unknown>>) => {
    const statuses: number[] = [];
    for (let i = 0; i < ROUNDS; i++) statuses.push((await request()).status);
    return statuses;
  };
  const all = (status: number) => Array<number>(ROUNDS).fill(status);
  const createToken = async (body: Record<string, unknown>) => {
    const created = await call<{ auth: { client_token: string; accessor: string } }>('POST', '/v1/auth/token/create', { token: root, body });
    expect(created.status).toBe(200);
    return created.body.auth;
  };
  /** Worker processes of the gateway: the children of its primary. */
  const workerPids = () =>
    execFileSync('pgrep', ['-P', String(topology.processes.find((p) => p.name === 'all-in-one' || p.name === 'gateway-0')!.child.pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);

  const sealedAnywhere = async () => {
    for (let i = 0; i < ROUNDS; i++) if ((await call<{ sealed: boolean }>('GET', '/v1/sys/seal-status')).body.sealed) return true;
    return false;
  };

  beforeAll(async () => {
    topology = await startTopology(kind, { workers: 2 });
    url = topology.urls[0];
    ({ rootToken: root, keys: [key] } = await initAndUnseal(url));
    // The worker that did not take the unseal has followed it before the call returned.
    expect(await sealedAnywhere()).toBe(false);
    expect((await call('POST', '/v1/sys/mounts/kv', { token: root, body: { type: 'kv', options: { version: '2' } } })).status).toBe(204);
  }, 180_000);

  afterAll(async () => {
    await topology?.stop();
  });

  test('a token revoked through one worker is refused by every worker on the very next request', async () => {
    const { client_token: token } = await createToken({ policies: ['default'] });
    // Cached by every worker first.
    expect(await everywhere(() => call('GET', '/v1/auth/token/lookup-self', { token }))).toEqual(all(200));
    expect((await call('POST', '/v1/auth/token/revoke', { token: root, body: { token } })).status).toBe(204);
    expect(await everywhere(() => call('GET', '/v1/auth/token/lookup-self', { token }))).toEqual(all(403));
  });

  test('a policy changed through one worker is in force on every worker when the call returns', async () => {
    const policy = (capabilities: string) => ({ policy: `path "kv/data/policy-test" { capabilities = [${capabilities}] }` });
    expect((await call('PUT', '/v1/sys/policies/acl/reader', { token: root, body: policy('"read"') })).status).toBe(204);
    expect((await call('POST', '/v1/kv/data/policy-test', { token: root, body: { data: { v: '1' } } })).status).toBe(200);
    const { client_token: token } = await createToken({ policies: ['reader'] });
    expect(await everywhere(() => call('GET', '/v1/kv/data/policy-test', { token }))).toEqual(all(200));
    expect((await call('PUT', '/v1/sys/policies/acl/reader', { token: root, body: policy('"deny"') })).status).toBe(204);
    expect(await everywhere(() => call('GET', '/v1/kv/data/policy-test', { token }))).toEqual(all(403));
  });

  test('check-and-set holds across workers: of concurrent writes at one version exactly one wins', async () => {
    expect((await call('POST', '/v1/kv/data/cas-test', { token: root, body: { data: { v: 'first' } } })).status).toBe(200);
    const writes = await Promise.all(
      Array.from({ length: ROUNDS }, (_, i) => call('POST', '/v1/kv/data/cas-test', { token: root, body: { options: { cas: 1 }, data: { v: `writer-${i}` } } })),
    );
    expect(writes.filter((write) => write.status === 200)).toHaveLength(1);
    expect(writes.filter((write) => write.status === 400)).toHaveLength(ROUNDS - 1);
    const read = await call<{ data: { metadata: { version: number } } }>('GET', '/v1/kv/data/cas-test', { token: root });
    expect(read.body.data.metadata.version).toBe(2);
  });

  test('mounts and auth methods enabled and disabled at once through both workers all persist', async () => {
    const loops = Array.from({ length: 8 }, (_, loop) => loop);
    const perLoop = 3;
    const paths = loops.flatMap((loop) => Array.from({ length: perLoop }, (_, i) => `together-${loop}-${i}`));
    const each = (request: (loop: number, i: number) => Promise<ApiResponse<unknown>>) =>
      Promise.all(loops.map(async (loop) => {
        const statuses: number[] = [];
        for (let i = 0; i < perLoop; i++) statuses.push((await request(loop, i)).status);
        return statuses;
      }));
    const allOf = (status: number) => loops.map(() => Array<number>(perLoop).fill(status));
    expect(await each((loop, i) => call('POST', `/v1/sys/mounts/together-${loop}-${i}`, { token: root, body: { type: 'kv' } }))).toEqual(allOf(204));
    expect(await each((loop, i) => call('POST', `/v1/sys/auth/together-${loop}-${i}`, { token: root, body: { type: 'userpass' } }))).toEqual(allOf(204));
    const listed = async (table: 'mounts' | 'auth') => Object.keys((await call<{ data: Record<string, unknown> }>('GET', `/v1/sys/${table}`, { token: root })).body.data);
    const missing = async (table: 'mounts' | 'auth') => {
      const present = await listed(table);
      return paths.filter((path) => !present.includes(`${path}/`));
    };
    expect(await missing('mounts')).toEqual([]);
    expect(await missing('auth')).toEqual([]);
    expect(await each((loop, i) => call('PUT', `/v1/together-${loop}-${i}/written`, { token: root, body: { v: 'x' } }))).toEqual(allOf(204));

    expect(await each((loop, i) => call('DELETE', `/v1/sys/mounts/together-${loop}-${i}`, { token: root }))).toEqual(allOf(204));
    expect(await each((loop, i) => call('DELETE', `/v1/sys/auth/together-${loop}-${i}`, { token: root }))).toEqual(allOf(204));
    expect((await missing('mounts')).length).toBe(paths.length);
    expect((await missing('auth')).length).toBe(paths.length);
    expect(await each((loop, i) => call('PUT', `/v1/together-${loop}-${i}/written`, { token: root, body: { v: 'x' } }))).toEqual(allOf(404));
  });

  test('a lease renewed through one worker is renewed for every worker; one revoked is gone everywhere; one expired is revoked once', async () => {
    const { client_token: token, accessor } = await createToken({ policies: ['default'], ttl: '1h' });
    expect((await call('POST', '/v1/auth/token/renew', { token: root, body: { token, increment: '2h' } })).status).toBe(200);
    const ttls = await Promise.all(Array.from({ length: ROUNDS }, () => call<{ data: { ttl: number } }>('GET', '/v1/auth/token/lookup-self', { token })));
    for (const lookup of ttls) expect(lookup.body.data.ttl).toBeGreaterThan(3600);
    expect((await call('PUT', '/v1/sys/leases/revoke', { token: root, body: { lease_id: `auth/token/create/${accessor}` } })).status).toBe(204);
    expect(await everywhere(() => call('GET', '/v1/auth/token/lookup-self', { token }))).toEqual(all(403));

    // Expiry runs on one worker; the revocation it makes is in force on the other.
    const { client_token: shortLived } = await createToken({ policies: ['default'], ttl: '2s' });
    await eventually(async () => (await everywhere(() => call('GET', '/v1/auth/token/lookup-self', { token: shortLived }))).every((status) => status === 403), 30_000, 200);
  });

  test('a worker that is killed is started again, and the listener keeps serving', async () => {
    const before = workerPids();
    expect(before).toHaveLength(2);
    process.kill(before[0], 'SIGKILL');
    await eventually(async () => {
      const now = workerPids();
      return now.length === 2 && !now.includes(before[0]);
    }, 120_000, 200);
    // The new worker follows the unseal before it takes connections.
    expect(await everywhere(() => call('GET', '/v1/auth/token/lookup-self', { token: root }))).toEqual(all(200));
  });

  test('sys/rotate works through every worker, whether it took the unseal or followed it (or was started since)', async () => {
    const term = async () => (await call<{ data: { term: number } }>('GET', '/v1/sys/key-status', { token: root })).body.data.term;
    const before = await term();
    // Consecutive calls, each on its own connection, take turns among the workers.
    expect(await everywhere(() => call('PUT', '/v1/sys/rotate', { token: root }))).toEqual(all(204));
    expect(await term()).toBe(before + ROUNDS);
    expect((await call('POST', '/v1/kv/data/after-rotations', { token: root, body: { data: { v: 'new term' } } })).status).toBe(200);
    expect(await everywhere(() => call('GET', '/v1/kv/data/after-rotations', { token: root }))).toEqual(all(200));
    expect(await everywhere(() => call('GET', '/v1/kv/data/cas-test', { token: root }))).toEqual(all(200));
  });

  test('sealing through one worker seals every worker before the call returns; unsealing unseals every worker', async () => {
    expect((await call('PUT', '/v1/sys/seal', { token: root })).status).toBe(204);
    expect(await everywhere(() => call('GET', '/v1/kv/data/cas-test', { token: root }))).toEqual(all(503));
    expect((await call('PUT', '/v1/sys/unseal', { body: { key } })).status).toBe(200);
    expect(await everywhere(() => call('GET', '/v1/kv/data/cas-test', { token: root }))).toEqual(all(200));
  });
});
