/**
 * Issue 15, the pkcs11 seal: a SoftHSM2 token created here in a temporary directory, reached
 * through pkcs11js by every gateway on its own (both topologies); and through a PKCS#11 module
 * between them and SoftHSM2 that stops answering.
 */
import { PKCS11_SEAL_CALL_TIMEOUT_MS } from '@svc/seal';
import { PLAIN_LISTENER, Pkcs11Relay, SOFTHSM_LIBRARY, SoftHsm, api, assertingCalls, eventually, restartEachGatewayAlone, startTopology, type ApiResponse, type Topology, type TopologyKind } from '@svc/testing';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

const TOKEN = 'svc-e2e';
const PIN = '246810';
const WRONG_PIN = '13579-wrong';

function pkcs11Seal(fields: string, lib = SOFTHSM_LIBRARY): string {
  return `seal "pkcs11" {\n  lib = "${lib}"\n  token_label = "${TOKEN}"\n  key_label = "svc-root"\n${fields}}\n`;
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('pkcs11 seal, %s', (kind) => {
  let hsm: SoftHsm;
  let relay: Pkcs11Relay;
  let topology: Topology;
  let root: string;
  const gateways = kind === 'distributed' ? ['gateway-0', 'gateway-1'] : ['all-in-one'];

  const call = (method: string, where: string, body?: unknown, token?: string, url = topology.urls[0]): Promise<ApiResponse<Body>> =>
    api<Body>(url, method, `/v1/${where}`, { body, token });
  const { ok, refused } = assertingCalls(call);
  const everyGateway = (sealed: boolean) =>
    eventually(async () => (await Promise.all(topology.urls.map((url) => api<Body>(url, 'GET', '/v1/sys/seal-status')))).every((res) => res.body.sealed === sealed), 20_000);
  const restartGateways = async () => {
    await Promise.all(gateways.map((name) => topology.stopProcess(name)));
    for (const name of gateways) await topology.restartProcess(name);
  };

  beforeAll(async () => {
    hsm = SoftHsm.create().use();
    hsm.initToken(TOKEN, PIN);
    relay = Pkcs11Relay.build();
    topology = await startTopology(kind, { gateways: gateways.length, listeners: [PLAIN_LISTENER], gatewayConfig: pkcs11Seal(`  pin = "${PIN}"\n`) });
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    relay?.remove();
    hsm?.remove();
  });

  it('without the key and without generate_key, sys/init answers 503 naming the key and initializes nothing', async () => {
    await refused('PUT', 'sys/init', { recovery_shares: 3, recovery_threshold: 2 }, 503, /pkcs11 seal: no key labelled "svc-root" on the token labelled "svc-e2e"; create it on the token or set generate_key = "true"/);
    expect((await ok('GET', 'sys/init')).initialized).toBe(false);
  });

  it('with generate_key, init creates the key and gives recovery keys; every gateway unseals through the HSM', async () => {
    topology.reconfigureGateways(pkcs11Seal(`  pin = "${PIN}"\n  generate_key = "true"\n`));
    await restartGateways();
    const init = await ok('PUT', 'sys/init', { recovery_shares: 3, recovery_threshold: 2 });
    expect(init).toMatchObject({ keys: [], recovery_keys: [expect.any(String), expect.any(String), expect.any(String)] });
    root = init.root_token;
    await everyGateway(false);
    for (const url of topology.urls) {
      expect((await call('GET', 'sys/seal-status', undefined, undefined, url)).body).toMatchObject({ type: 'pkcs11', initialized: true, sealed: false, t: 2, n: 3, recovery_seal: true });
    }
    await ok('PUT', 'secret/hsm', { value: 'kept by the HSM' }, root);
    await refused('PUT', 'sys/unseal', { key: init.recovery_keys[0] }, 400, /recovery keys cannot unseal/);
  });

  it('after a seal, each gateway restarted alone opens the HSM itself', async () => {
    await ok('PUT', 'sys/seal', undefined, root);
    await everyGateway(true);
    await restartEachGatewayAlone(topology, gateways, async (url) => {
      await eventually(async () => (await api<Body>(url, 'GET', '/v1/sys/seal-status')).body.sealed === false, 20_000);
      expect((await call('GET', 'secret/hsm', undefined, root, url)).body.data).toEqual({ value: 'kept by the HSM' });
    });
    await everyGateway(false);
  }, 120_000);

  it('a wrong PIN (SVC_HSM_PIN) keeps every gateway sealed with a log line that does not show it', async () => {
    process.env.SVC_HSM_PIN = WRONG_PIN;
    try {
      await restartGateways();
    } finally {
      delete process.env.SVC_HSM_PIN;
    }
    for (const url of topology.urls) {
      expect((await call('GET', 'sys/seal-status', undefined, undefined, url)).body).toMatchObject({ type: 'pkcs11', initialized: true, sealed: true });
      expect((await call('GET', 'secret/hsm', undefined, root, url)).status).toBe(503);
    }
    for (const process of topology.processes.filter((p) => gateways.includes(p.name))) {
      await eventually(async () => /the seal could not unseal the service; it stays sealed and tries again/.test(process.logs.join('\n')), 10_000);
      const logs = process.logs.join('\n');
      expect(logs).toMatch(/pkcs11 seal: the token labelled \\"svc-e2e\\" refused the PIN \(CKR_PIN_INCORRECT\)/);
      expect(logs).not.toContain(WRONG_PIN);
    }
    await restartGateways();
    await everyGateway(false);
    expect((await ok('GET', 'secret/hsm', undefined, root)).data).toEqual({ value: 'kept by the HSM' });
  }, 120_000);

  it('an HSM that stops answering: each gateway stays sealed and answers, logs the call not answered within the deadline, and unseals once it answers again', async () => {
    topology.reconfigureGateways(pkcs11Seal(`  pin = "${PIN}"\n`, relay.lib));
    relay.silence();
    try {
      await restartGateways();
      // A gateway's unseal attempt has just entered the library, which holds it.
      const held = relay.stalledProcesses().length;
      await eventually(async () => relay.stalledProcesses().length > held, 20_000);
      for (const url of topology.urls) {
        const asked = Date.now();
        expect((await call('GET', 'sys/seal-status', undefined, undefined, url)).body).toMatchObject({ type: 'pkcs11', sealed: true });
        expect(Date.now() - asked).toBeLessThan(1_000);
      }
      const notAnswered = `pkcs11 seal: could not decrypt the root key on the token labelled "${TOKEN}": the PKCS#11 library ${relay.lib} did not answer C_Initialize within ${PKCS11_SEAL_CALL_TIMEOUT_MS / 1000} s`;
      for (const gateway of topology.processes.filter((p) => gateways.includes(p.name))) {
        await eventually(async () => gateway.logs.join('\n').includes(JSON.stringify(notAnswered).slice(1, -1)), PKCS11_SEAL_CALL_TIMEOUT_MS + 10_000);
      }
    } finally {
      relay.heal();
    }
    await everyGateway(false);
    expect((await ok('GET', 'secret/hsm', undefined, root)).data).toEqual({ value: 'kept by the HSM' });
  }, 120_000);
});
