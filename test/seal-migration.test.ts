/**
 * Issue 15, seal migration as Vault documents it: Shamir → pkcs11 (SoftHSM2 token made here) with
 * the unseal keys, then pkcs11 → Shamir with the recovery keys, keeping kv and transit data. In the
 * distributed topology both gateways take the new configuration; the migration is made through
 * one of them and the other follows it, since both read the seal's state from the shared storage.
 */
import {
  PLAIN_LISTENER,
  SOFTHSM_LIBRARY,
  SoftHsm,
  api,
  assertingCalls,
  eventually,
  runCli,
  startTopology,
  type ApiResponse,
  type Topology,
  type TopologyKind,
} from '@svc/testing';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

const TOKEN = 'svc-migration';
const PIN = '97531';
const PLAINTEXT = Buffer.from('transit data from before the migration').toString('base64');

function pkcs11Seal(extra = ''): string {
  return `seal "pkcs11" {\n  lib = "${SOFTHSM_LIBRARY}"\n  token_label = "${TOKEN}"\n  pin = "${PIN}"\n  key_label = "svc-root"\n  generate_key = "true"\n${extra}}\n`;
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('seal migration, %s', (kind) => {
  let hsm: SoftHsm;
  let topology: Topology;
  let root: string;
  let unsealKeys: string[];
  let ciphertext: string;
  const gateways = kind === 'distributed' ? ['gateway-0', 'gateway-1'] : ['all-in-one'];

  const call = (method: string, where: string, body?: unknown, token?: string, url = topology.urls[0]): Promise<ApiResponse<Body>> =>
    api<Body>(url, method, `/v1/${where}`, { body, token });
  const { ok, refused } = assertingCalls(call);
  const statuses = async () => Promise.all(topology.urls.map(async (url) => (await api<Body>(url, 'GET', '/v1/sys/seal-status')).body));
  const everyGateway = (expected: Body) =>
    eventually(async () => (await statuses()).every((status) => Object.entries(expected).every(([field, value]) => status[field] === value)), 30_000);
  const restartGateways = async (config: string) => {
    topology.reconfigureGateways(config);
    await Promise.all(gateways.map((name) => topology.stopProcess(name)));
    for (const name of gateways) await topology.restartProcess(name);
  };
  /** Every gateway serves the kv secret and decrypts the transit ciphertext written before any migration. */
  const dataIsKept = async () => {
    for (const url of topology.urls) {
      expect((await call('GET', 'secret/app', undefined, root, url)).body.data).toEqual({ password: 'from before' });
      expect((await call('PUT', 'transit/decrypt/app', { ciphertext }, root, url)).body.data).toEqual({ plaintext: PLAINTEXT });
    }
  };

  beforeAll(async () => {
    hsm = SoftHsm.create().use();
    hsm.initToken(TOKEN, PIN);
    topology = await startTopology(kind, { gateways: gateways.length, services: kind === 'distributed' ? ['transit'] : [], listeners: [PLAIN_LISTENER] });
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    hsm?.remove();
  });

  it('starts as a Shamir service holding kv and transit data', async () => {
    const init = await ok('PUT', 'sys/init', { secret_shares: 3, secret_threshold: 2 });
    unsealKeys = init.keys;
    root = init.root_token;
    for (const key of unsealKeys.slice(0, 2)) await ok('PUT', 'sys/unseal', { key });
    await everyGateway({ sealed: false });
    await ok('PUT', 'secret/app', { password: 'from before' }, root);
    await ok('POST', 'sys/mounts/transit', { type: 'transit' }, root);
    await ok('POST', 'transit/keys/app', {}, root);
    ciphertext = (await ok('PUT', 'transit/encrypt/app', { plaintext: PLAINTEXT }, root)).data.ciphertext;
  });

  it('Shamir → pkcs11: migration mode until `svc operator unseal -migrate` gets the unseal keys, which become the recovery keys', async () => {
    await restartGateways(pkcs11Seal());
    await everyGateway({ type: 'shamir', initialized: true, sealed: true, migration: true, recovery_seal: true, t: 2, n: 3 });
    for (const process of topology.processes.filter((p) => gateways.includes(p.name))) {
      expect(process.logs.join('\n')).toMatch(/entering seal migration mode/);
    }
    await refused('PUT', 'sys/unseal', { key: unsealKeys[0] }, 400, /^'migrate' parameter must be set true in JSON body when in seal migration mode$/);

    const env = { SVC_ADDR: topology.urls[0] };
    const first = await runCli(['operator', 'unseal', '-migrate', unsealKeys[0]], env);
    expect(first.stdout).toMatch(/Seal Migration in Progress +true/);
    expect(first.stdout).toMatch(/Unseal Progress +1\/2/);
    const last = await runCli(['operator', 'unseal', '-migrate', unsealKeys[2]], env);
    expect([last.code, last.stderr]).toEqual([0, '']);

    await everyGateway({ type: 'pkcs11', sealed: false, migration: false, recovery_seal: true, t: 2, n: 3 });
    await dataIsKept();
    await refused('PUT', 'sys/unseal', { key: unsealKeys[0], migrate: true }, 400, /^'migrate' parameter set true in JSON body when not in seal migration mode$/);
  }, 180_000);

  it('after the migration every gateway restarted unseals itself through the HSM; the old unseal keys now only authorize', async () => {
    await restartGateways(pkcs11Seal());
    await everyGateway({ type: 'pkcs11', sealed: false, migration: false });
    await dataIsKept();
    await refused('PUT', 'sys/unseal', { key: unsealKeys[0] }, 400, /recovery keys cannot unseal/);
    const attempt = await ok('PUT', 'sys/generate-root/attempt', {});
    await ok('PUT', 'sys/generate-root/update', { key: unsealKeys[1], nonce: attempt.nonce });
    expect((await ok('PUT', 'sys/generate-root/update', { key: unsealKeys[2], nonce: attempt.nonce })).complete).toBe(true);
  }, 180_000);

  it('pkcs11 → Shamir: with the pkcs11 stanza disabled, the recovery keys migrate back and become the unseal keys', async () => {
    await restartGateways(pkcs11Seal('  disabled = "true"\n'));
    await everyGateway({ type: 'pkcs11', sealed: true, migration: true, recovery_seal: false, t: 2, n: 3 });
    await ok('PUT', 'sys/unseal', { key: unsealKeys[1], migrate: true });
    await ok('PUT', 'sys/unseal', { key: unsealKeys[0], migrate: true });
    await everyGateway({ type: 'shamir', sealed: false, migration: false, recovery_seal: false });
    await dataIsKept();

    // Shamir from now on: a restarted service waits for the unseal keys, without migrate.
    await restartGateways('');
    await everyGateway({ type: 'shamir', sealed: true, migration: false });
    for (const key of unsealKeys.slice(1)) await ok('PUT', 'sys/unseal', { key });
    await everyGateway({ sealed: false });
    await dataIsKept();
  }, 180_000);
});
