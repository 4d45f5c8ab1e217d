/**
 * An engine service with a listener serves its health, for the probes of an orchestrator: whether
 * it holds the keyring and whether its bus link is up. Nothing else is served there.
 */
import { api, eventually, initAndUnseal, NATS_URL, startTopology, TcpProxy, type Topology } from '@svc/testing';

describe('engine service health, distributed', () => {
  let proxy: TcpProxy;
  let topology: Topology;
  let gateway: string;
  let transit: string;

  beforeAll(async () => {
    proxy = await TcpProxy.start(NATS_URL);
    topology = await startTopology('distributed', {
      services: ['transit'],
      serviceListeners: true,
      natsUrlFor: (name) => (name === 'transit' ? proxy.url : NATS_URL),
    });
    gateway = topology.urls[0];
    transit = `http://${topology.processes.find((p) => p.name === 'transit')!.addresses[0]}`;
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    await proxy?.stop();
  });

  const health = (query = '') => api<{ service: string; sealed: boolean; bus: string }>(transit, 'GET', `/v1/sys/health${query}`);

  test('sealed until a gateway is unsealed (503, or the sealedcode asked for), then 200', async () => {
    const sealed = await health();
    expect(sealed.status).toBe(503);
    expect(sealed.body).toMatchObject({ service: 'transit', sealed: true, bus: 'connected' });
    expect((await health('?sealedcode=204')).status).toBe(204);
    expect((await health('?sealedcode=abc')).status).toBe(400);

    await initAndUnseal(gateway);
    await eventually(async () => (await health()).status === 200);
    expect((await health()).body).toMatchObject({ sealed: false, bus: 'connected' });
  });

  test('503 while its bus link is down, whatever the codes asked for; 200 again once it is back', async () => {
    proxy.partition('closed');
    await eventually(async () => (await health('?activecode=200&sealedcode=204')).status === 503);
    expect((await health()).body).toMatchObject({ bus: 'disconnected' });
    proxy.heal();
    await eventually(async () => (await health()).status === 200, 30_000, 200);
  });

  test('serves nothing but its health', async () => {
    expect((await api(transit, 'GET', '/v1/transit/keys')).status).toBe(404);
    expect((await api(transit, 'POST', '/v1/sys/health')).status).toBe(405);
  });
});
