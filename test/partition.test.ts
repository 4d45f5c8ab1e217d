/**
 * Gateway replicas cut off from the bus. A change made through one gateway is in force on every
 * gateway when the call returns: a replica that cannot be told stops serving from its caches until
 * it has resynchronized, and a replica that is gone is not waited for.
 */
import type { ChildProcess } from 'node:child_process';
import { api, eventually, initAndUnseal, NATS_URL, startTopology, TcpProxy, type Topology } from '@svc/testing';

describe('a gateway cut off from the bus, distributed', () => {
  let proxy: TcpProxy;
  let topology: Topology;
  let g0: string;
  let g1: string;
  let root: string;
  let keys: string[];

  const lookupSelf = (url: string, token: string) => api(url, 'GET', '/v1/auth/token/lookup-self', { token });
  const readSecret = (url: string) => api<{ data: { v: string } }>(url, 'GET', '/v1/secret/app', { token: root });
  const writeSecret = (v: string) => api(g0, 'POST', '/v1/secret/app', { token: root, body: { v } });
  const createToken = async () => {
    const created = await api<{ auth: { client_token: string } }>(g0, 'POST', '/v1/auth/token/create', { token: root, body: { policies: ['default'] } });
    expect(created.status).toBe(200);
    return created.body.auth.client_token;
  };
  /** Elapsed milliseconds of a call, for the bounds that tell failing fast from waiting for a timeout. */
  const timed = async <T>(call: () => Promise<T>): Promise<[T, number]> => {
    const started = performance.now();
    const result = await call();
    return [result, performance.now() - started];
  };

  beforeAll(async () => {
    proxy = await TcpProxy.start(NATS_URL);
    topology = await startTopology('distributed', {
      gateways: 2,
      services: ['transit'],
      natsUrlFor: (name) => (name === 'gateway-1' ? proxy.url : NATS_URL),
    });
    [g0, g1] = topology.urls;
    ({ rootToken: root, keys } = await initAndUnseal(g0));
    await eventually(async () => (await api<{ sealed: boolean }>(g1, 'GET', '/v1/sys/seal-status')).body.sealed === false);
    expect((await api(g0, 'POST', '/v1/sys/mounts/transit', { token: root, body: { type: 'transit' } })).status).toBe(204);
    await eventually(async () => (await api(g1, 'POST', '/v1/transit/random/8', { token: root })).status === 200);
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    await proxy?.stop();
  });

  test('silent partition: a token revoked and a value written elsewhere are never served stale, and the gateway resyncs when the link heals', async () => {
    const token = await createToken();
    expect((await writeSecret('v1')).status).toBe(204);
    // Both now sit in gateway-1's caches.
    expect((await lookupSelf(g1, token)).status).toBe(200);
    expect((await readSecret(g1)).body.data.v).toBe('v1');

    proxy.partition('silent');
    expect((await api(g0, 'POST', '/v1/auth/token/revoke', { token: root, body: { token } })).status).toBe(204);
    expect((await writeSecret('v2')).status).toBe(204);

    // gateway-1 heard nothing of either change: it refuses rather than answer from its caches.
    const stale = await lookupSelf(g1, token);
    expect(stale.status).toBe(503);
    expect(stale.body.errors[0]).toMatch(/lost contact with the cluster/);
    expect((await readSecret(g1)).status).toBe(503);
    expect((await lookupSelf(g0, token)).status).toBe(403);
    // Its health says so too, so an orchestrator takes it out of rotation.
    expect((await api(g1, 'GET', '/v1/sys/health?sealedcode=204&uninitcode=204')).status).toBe(503);
    expect((await api(g0, 'GET', '/v1/sys/health')).status).toBe(200);

    proxy.heal();
    await eventually(async () => (await lookupSelf(g1, token)).status === 403, 30_000, 200);
    expect((await readSecret(g1)).body.data.v).toBe('v2');
    expect((await api(g1, 'GET', '/v1/sys/health')).status).toBe(200);
  });

  test('closed link: requests on the cut gateway fail at once, and a revocation elsewhere does not wait for it', async () => {
    const token = await createToken();
    expect((await lookupSelf(g1, token)).status).toBe(200);

    proxy.partition('closed');
    // The bus timeout is 10 s; the gateway knows its link is down and answers 503 without waiting.
    const [encrypt, encryptMs] = await timed(() => api(g1, 'POST', '/v1/transit/random/8', { token: root }));
    expect(encrypt.status).toBe(503);
    expect(encryptMs).toBeLessThan(5_000);

    // The broker saw gateway-1's connection close, so gateway-0 learns it has no one to wait for.
    const [revoked, revokeMs] = await timed(() => api(g0, 'POST', '/v1/auth/token/revoke', { token: root, body: { token } }));
    expect(revoked.status).toBe(204);
    expect(revokeMs).toBeLessThan(2_000);
    expect((await lookupSelf(g1, token)).status).toBe(503);

    proxy.heal();
    await eventually(async () => (await lookupSelf(g1, token)).status === 403, 30_000, 200);
  });

  test('a seal made while a gateway was cut off seals it too once the link heals', async () => {
    const sealed = (url: string) => api<{ sealed: boolean }>(url, 'GET', '/v1/sys/seal-status').then((r) => r.body.sealed);
    proxy.partition('silent');
    expect((await api(g0, 'PUT', '/v1/sys/seal', { token: root })).status).toBe(204);
    expect(await sealed(g0)).toBe(true);
    proxy.heal();
    await eventually(() => sealed(g1), 30_000, 200);

    expect((await api(g0, 'PUT', '/v1/sys/unseal', { body: { key: keys[0] } })).status).toBe(200);
    await eventually(async () => !(await sealed(g1)), 30_000, 200);
    await eventually(async () => (await readSecret(g1)).status === 200, 30_000, 200);
  });

  test('a gateway killed outright holds up no write of the survivor', async () => {
    expect((await readSecret(g1)).status).toBe(200);
    const killed = topology.processes.find((p) => p.name === 'gateway-1')!.child;
    await new Promise<void>((resolve) => {
      killed.once('exit', () => resolve());
      killed.kill('SIGKILL');
    });
    // A silent peer is waited for until it has certainly stopped serving (about 3 s); a dead one is
    // known at once from the broker's "no responders".
    const [written, writeMs] = await timed(() => writeSecret('v3'));
    expect(written.status).toBe(204);
    expect(writeMs).toBeLessThan(1_500);
  });
});

describe('a service that dies while handling a request, distributed', () => {
  let topology: Topology;
  let url: string;
  let root: string;

  beforeAll(async () => {
    topology = await startTopology('distributed', { services: ['transit'] });
    url = topology.urls[0];
    root = (await initAndUnseal(url)).rootToken;
    expect((await api(url, 'POST', '/v1/sys/mounts/transit', { token: root, body: { type: 'transit' } })).status).toBe(204);
    await eventually(async () => (await api(url, 'POST', '/v1/transit/random/8', { token: root })).status === 200);
  }, 120_000);

  afterAll(() => topology?.stop());

  test('its in-flight requests get 503 as soon as no instance is left, not at the bus timeout', async () => {
    const transit = topology.processes.find((p) => p.name === 'transit')!.child;
    // Frozen, the instance takes the request off the bus but never answers it; then it dies.
    transit.kill('SIGSTOP');
    const started = performance.now();
    const inFlight = api(url, 'POST', '/v1/transit/random/8', { token: root });
    // Time for the request to reach the frozen instance (killed first, it would meet "no responders").
    await new Promise((resolve) => setTimeout(resolve, 200));
    transit.kill('SIGKILL');
    const answer = await inFlight;
    expect(answer.status).toBe(503);
    expect(answer.body.errors[0]).toMatch(/service "transit" is unavailable/);
    // The bus timeout is 10 s; a second's sweep and one round trip find the service gone.
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

describe('a service slower than the bus timeout, distributed', () => {
  let topology: Topology;
  let url: string;
  let root: string;
  let transit: ChildProcess;
  const random = () => api<{ errors: string[] }>(url, 'POST', '/v1/transit/random/8', { token: root });

  beforeAll(async () => {
    topology = await startTopology('distributed', {
      services: ['transit'],
      nats: { url: NATS_URL, gateway: 'request_timeout = "2s"' },
      gatewayConfig: 'default_max_request_duration = "6s"',
    });
    url = topology.urls[0];
    root = (await initAndUnseal(url)).rootToken;
    expect((await api(url, 'POST', '/v1/sys/mounts/transit', { token: root, body: { type: 'transit' } })).status).toBe(204);
    await eventually(async () => (await random()).status === 200);
    transit = topology.processes.find((p) => p.name === 'transit')!.child;
  }, 120_000);

  afterAll(() => topology?.stop());

  test('an engine request is waited for up to default_max_request_duration, not the bus request_timeout', async () => {
    // Frozen for 3 s: longer than the bus's 2 s, well within the request's 6 s.
    transit.kill('SIGSTOP');
    const started = performance.now();
    const answer = random();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    transit.kill('SIGCONT');
    expect((await answer).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(3_000);
  });

  test('an engine request not answered within default_max_request_duration is a 503 then', async () => {
    transit.kill('SIGSTOP');
    const started = performance.now();
    const answer = await random();
    const elapsedMs = performance.now() - started;
    transit.kill('SIGCONT');
    expect([answer.status, answer.body.errors[0]]).toEqual([503, expect.stringMatching(/service "transit" is unavailable \(timeout\)/)]);
    expect(elapsedMs).toBeGreaterThanOrEqual(6_000);
    // The bus's own default would have been 10 s.
    expect(elapsedMs).toBeLessThan(10_000);
    await eventually(async () => (await random()).status === 200);
  });
});
