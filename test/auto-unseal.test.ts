/**
 * Issue 15, auto-unseal, in both topologies, with each provider: the transit seal with a second
 * Secrets Service (a dev server started here), where a TCP relay between the cluster and the
 * provider stands for the network, so the provider can be made unreachable without losing its
 * in-memory transit key; and the awskms seal with the KMS emulator, which checks SigV4 and can be
 * taken down and brought back.
 */
import { PLAIN_LISTENER, TcpProxy, api, assertingCalls, eventually, prepareTransitSealProvider, restartEachGatewayAlone, runCli, startServerProcess, startTopology, type ApiResponse, type Topology, type TopologyKind } from '@svc/testing';
import { AWSKMS_REQUEST_TIMEOUT_MS, TRANSIT_SEAL_REQUEST_TIMEOUT_MS } from '@svc/seal';
import { startKmsEmulator, type KmsEmulator } from './emulators/aws/kms';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

const PROVIDER_ROOT = 'provider-root';

/** A seal's provider as the tests drive it: its `seal` stanza, and the network to it cut and restored. */
interface SealProvider {
  type: string;
  gatewayConfig: string;
  unreachable(): Promise<void>;
  /** Connections are accepted and never answered (until `reachable`). */
  silent(): Promise<void>;
  reachable(): Promise<void>;
  /** How long the seal waits for an answer, and what it logs when none comes. */
  deadlineMs: number;
  noAnswer: RegExp;
  stop(): Promise<void>;
}

/** The transit provider: a dev server with a transit key and a renewable token allowed only to use it. */
async function startTransitProvider(): Promise<SealProvider> {
  const provider = await startServerProcess('seal-provider', ['-dev', `-dev-root-token-id=${PROVIDER_ROOT}`, '-dev-listen-address=127.0.0.1:0']);
  const token = await prepareTransitSealProvider(`http://${provider.addresses[0]}`, PROVIDER_ROOT);
  const relay = await TcpProxy.start(`http://${provider.addresses[0]}`);
  return {
    type: 'transit',
    gatewayConfig: `seal "transit" {\n  address = "${relay.url}"\n  token = "${token}"\n  key_name = "autounseal"\n}\n`,
    unreachable: async () => relay.partition('closed'),
    silent: async () => relay.partition('silent'),
    reachable: async () => relay.heal(),
    deadlineMs: TRANSIT_SEAL_REQUEST_TIMEOUT_MS,
    noAnswer: /transit seal at [^ ]* \(transit\/decrypt\/autounseal\): unreachable: no answer within 10 s/,
    stop: async () => {
      await relay.stop();
      await provider.stop();
    },
  };
}

const KMS_REGION = 'eu-west-1';
const KMS_ALIAS = 'alias/svc-seal';

/** The awskms provider: the KMS emulator with a key under an alias and credentials for the service. */
async function startKmsProvider(): Promise<SealProvider & { kms: KmsEmulator; accessKeyId: string; secretAccessKey: string }> {
  const kms = await startKmsEmulator({ region: KMS_REGION });
  const { accessKeyId, secretAccessKey } = kms.state.createCredentials();
  kms.state.createAlias(KMS_ALIAS, kms.state.createKey('svc seal').id);
  return {
    type: 'awskms',
    kms,
    accessKeyId,
    secretAccessKey,
    gatewayConfig:
      `seal "awskms" {\n  region = "${KMS_REGION}"\n  access_key = "${accessKeyId}"\n  secret_key = "${secretAccessKey}"\n` +
      `  kms_key_id = "${KMS_ALIAS}"\n  endpoint = "${kms.url}"\n}\n`,
    unreachable: () => kms.outage('refuse-connections'),
    silent: () => kms.outage('silent'),
    reachable: () => kms.restore(),
    deadlineMs: AWSKMS_REQUEST_TIMEOUT_MS,
    noAnswer: /awskms seal \(key alias\/svc-seal at [^)]*\): Decrypt failed: TimeoutError/,
    stop: () => kms.close(),
  };
}

const PROVIDERS = { transit: startTransitProvider, awskms: startKmsProvider };
const CASES = (['transit', 'awskms'] as const).flatMap((seal) => (['all-in-one', 'distributed'] as TopologyKind[]).map((kind) => [seal, kind] as const));

describe.each(CASES)('%s auto-unseal, %s', (sealType, kind) => {
  let provider: SealProvider;
  let topology: Topology;
  let root: string;
  let recoveryKeys: string[];
  const gateways = kind === 'distributed' ? ['gateway-0', 'gateway-1'] : ['all-in-one'];

  const call = (method: string, where: string, body?: unknown, token?: string, url = topology.urls[0]): Promise<ApiResponse<Body>> =>
    api<Body>(url, method, `/v1/${where}`, { body, token });
  const { ok, refused } = assertingCalls(call);
  const everyGateway = (sealed: boolean, urls = topology.urls) =>
    eventually(async () => (await Promise.all(urls.map((url) => api<Body>(url, 'GET', '/v1/sys/seal-status')))).every((res) => res.body.sealed === sealed), 20_000);

  /** Generate-root with `shares`; the decoded root token, or the refusal of the last share. */
  const generateRoot = async (shares: string[]): Promise<{ token?: string; refusal?: string }> => {
    const attempt = await ok('PUT', 'sys/generate-root/attempt', {});
    let last: ApiResponse<Body> | undefined;
    for (const key of shares) {
      last = await call('PUT', 'sys/generate-root/update', { key, nonce: attempt.nonce });
      if (last.status !== 200) {
        await ok('DELETE', 'sys/generate-root/attempt');
        return { refusal: (last.body.errors as string[]).join('; ') };
      }
    }
    expect(last?.body.complete).toBe(true);
    const decoded = await runCli(['operator', 'generate-root', '-decode', last?.body.encoded_token as string, '-otp', attempt.otp as string], {});
    expect(decoded.code).toBe(0);
    return { token: decoded.stdout.trim() };
  };

  beforeAll(async () => {
    provider = await PROVIDERS[sealType]();
    topology = await startTopology(kind, { gateways: gateways.length, listeners: [PLAIN_LISTENER], gatewayConfig: provider.gatewayConfig });
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    await provider?.stop();
  });

  it('initializes with recovery keys and unseals itself; seal status names the seal', async () => {
    const init = await ok('PUT', 'sys/init', { recovery_shares: 3, recovery_threshold: 2 });
    expect(init).toMatchObject({ keys: [], keys_base64: [], recovery_keys: [expect.any(String), expect.any(String), expect.any(String)] });
    expect(init.recovery_keys_base64).toHaveLength(3);
    root = init.root_token;
    recoveryKeys = init.recovery_keys;
    await everyGateway(false);
    for (const url of topology.urls) {
      expect((await call('GET', 'sys/seal-status', undefined, undefined, url)).body).toMatchObject({ type: sealType, initialized: true, sealed: false, t: 2, n: 3, recovery_seal: true });
    }
    await ok('PUT', 'secret/kept', { value: 'still here' }, root);
  });

  it('never unseals with recovery keys; sys/rekey (the root key) refuses what needs unseal key shares', async () => {
    await refused('PUT', 'sys/unseal', { key: recoveryKeys[0] }, 400, /recovery keys cannot unseal/);
    await refused('PUT', 'sys/rekey/init', { require_verification: true }, 400, /requiring verification not supported when rekeying the root key with recovery keys/);
  });

  it('after a seal, each gateway restarted alone unseals itself', async () => {
    await ok('PUT', 'sys/seal', undefined, root);
    await everyGateway(true);
    await restartEachGatewayAlone(topology, gateways, async (url) => {
      await everyGateway(false, [url]);
      expect((await call('GET', 'secret/kept', undefined, root, url)).body.data).toEqual({ value: 'still here' });
    });
    await everyGateway(false);
  }, 120_000);

  it('generate-root takes recovery shares', async () => {
    const { token } = await generateRoot(recoveryKeys.slice(0, 2));
    expect((await ok('GET', 'auth/token/lookup-self', undefined, token)).data.policies).toEqual(['root']);
  });

  it('a recovery-key rekey replaces the recovery keys: the old ones fail, the new ones authorize', async () => {
    const started = await ok('PUT', 'sys/rekey-recovery-key/init', { secret_shares: 2, secret_threshold: 2 });
    await ok('PUT', 'sys/rekey-recovery-key/update', { key: recoveryKeys[1], nonce: started.nonce });
    const done = await ok('PUT', 'sys/rekey-recovery-key/update', { key: recoveryKeys[2], nonce: started.nonce });
    expect(done).toMatchObject({ complete: true, keys: [expect.any(String), expect.any(String)] });
    expect((await ok('GET', 'sys/seal-status')).t).toBe(2);
    expect((await ok('GET', 'sys/seal-status')).n).toBe(2);

    expect((await generateRoot(recoveryKeys.slice(0, 2))).refusal).toMatch(/do not form this service's recovery key/);
    const { token } = await generateRoot(done.keys);
    expect((await ok('GET', 'auth/token/lookup-self', undefined, token)).data.policies).toEqual(['root']);
    await refused('PUT', 'sys/unseal', { key: done.keys[0] }, 400, /recovery keys cannot unseal/);
    recoveryKeys = done.keys;
  });

  it('sys/rekey with recovery shares rotates the root key: nothing handed out, every gateway follows, restarts unseal', async () => {
    const started = await ok('PUT', 'sys/rekey/init', {});
    expect(started).toMatchObject({ started: true, t: 1, n: 1, required: 2, progress: 0 });
    const urls = topology.urls;
    // Each share to another gateway: the progress is shared.
    expect(await ok('PUT', 'sys/rekey/update', { key: recoveryKeys[0], nonce: started.nonce }, undefined)).toMatchObject({ progress: 1 });
    const done = await api<Body>(urls[urls.length - 1], 'PUT', '/v1/sys/rekey/update', { body: { key: recoveryKeys[1], nonce: started.nonce } });
    expect(done.body).toMatchObject({ complete: true, keys: [], keys_base64: [] });
    // The other gateway opened with the old root key; its keyring rotation is stored under the new one.
    expect((await api(urls[urls.length - 1], 'PUT', '/v1/sys/rotate', { token: root })).status).toBe(204);
    for (const url of urls) expect((await call('GET', 'secret/kept', undefined, root, url)).body.data).toEqual({ value: 'still here' });
    await Promise.all(gateways.map((name) => topology.restartProcess(name)));
    await everyGateway(false);
    expect((await ok('GET', 'secret/kept', undefined, root)).data).toEqual({ value: 'still here' });
    // The recovery key moved to the new root key with everything else.
    expect((await generateRoot(recoveryKeys)).token).toEqual(expect.any(String));
  }, 120_000);

  if (sealType === 'awskms') {
    const kmsProvider = () => provider as Awaited<ReturnType<typeof startKmsProvider>>;

    it('after the KMS key is rotated, a restart still unseals; KMS answering 500 keeps it sealed until it recovers', async () => {
      const { kms } = kmsProvider();
      const key = kms.state.key(KMS_ALIAS);
      kms.state.rotate(key.id);
      await Promise.all(gateways.map((name) => topology.restartProcess(name)));
      await everyGateway(false);
      expect(kms.state.calls).toContain('Decrypt');

      await kms.outage('internal-error');
      await Promise.all(gateways.map((name) => topology.restartProcess(name)));
      for (const url of topology.urls) expect((await call('GET', 'secret/kept', undefined, root, url)).status).toBe(503);
      for (const process of topology.processes.filter((p) => gateways.includes(p.name))) {
        expect(process.logs.join('\n')).toMatch(/"err":"awskms seal \(key alias\/svc-seal at [^"]*\): Decrypt failed: KMSInternalException \(500\)[^\n]*"msg":"the seal could not unseal the service; it stays sealed and tries again"/);
      }
      await kms.restore();
      await everyGateway(false);
    }, 120_000);

    it('with a secret KMS does not accept: sealed, the signature error in the log and no key material; unseals once it matches', async () => {
      const { kms, accessKeyId, secretAccessKey } = kmsProvider();
      // The key pair was rotated at AWS but not in this configuration.
      kms.state.credentials.set(accessKeyId, { secretAccessKey: 'rotated-at-aws' });
      await Promise.all(gateways.map((name) => topology.restartProcess(name)));
      for (const url of topology.urls) expect((await call('GET', 'sys/seal-status', undefined, undefined, url)).body).toMatchObject({ initialized: true, sealed: true });
      for (const process of topology.processes.filter((p) => gateways.includes(p.name))) {
        const logs = process.logs.join('\n');
        expect(logs).toMatch(/Decrypt failed: InvalidSignatureException \(400\): The request signature we calculated does not match[^\n]*"msg":"the seal could not unseal the service; it stays sealed and tries again"/);
        for (const secret of [secretAccessKey, 'rotated-at-aws']) expect(logs).not.toContain(secret);
      }
      kms.state.credentials.set(accessKeyId, { secretAccessKey });
      await everyGateway(false);
      expect((await ok('GET', 'secret/kept', undefined, root)).data).toEqual({ value: 'still here' });
    }, 120_000);
  }

  it('with the provider accepting and never answering at start: the timeout logged within the deadline, sealed; unseals once it answers', async () => {
    await provider.silent();
    const restarted = Date.now();
    await Promise.all(gateways.map((name) => topology.restartProcess(name)));
    const timedOut = new RegExp(`${provider.noAnswer.source}[^\\n]*"msg":"the seal could not unseal the service; it stays sealed and tries again"`);
    const restartedGateways = topology.processes.filter((p) => gateways.includes(p.name));
    // One attempt, then its failure: with room for a loaded machine, well short of a hang.
    await eventually(async () => restartedGateways.every((process) => timedOut.test(process.logs.join('\n'))), 3 * provider.deadlineMs - (Date.now() - restarted));
    for (const url of topology.urls) expect((await call('GET', 'secret/kept', undefined, root, url)).status).toBe(503);
    await provider.reachable();
    await everyGateway(false);
    expect((await ok('GET', 'secret/kept', undefined, root)).data).toEqual({ value: 'still here' });
  }, 120_000);

  it('with the provider unreachable at start: sealed, 503 and a log line; unseals once it returns', async () => {
    await provider.unreachable();
    await Promise.all(gateways.map((name) => topology.restartProcess(name)));
    for (const url of topology.urls) {
      expect((await call('GET', 'sys/seal-status', undefined, undefined, url)).body).toMatchObject({ initialized: true, sealed: true });
      const read = await call('GET', 'secret/kept', undefined, root, url);
      expect(read.status).toBe(503);
    }
    for (const process of topology.processes.filter((p) => gateways.includes(p.name))) {
      expect(process.logs.join('\n')).toMatch(/the seal could not unseal the service; it stays sealed and tries again/);
    }
    await provider.reachable();
    await everyGateway(false);
    expect((await ok('GET', 'secret/kept', undefined, root)).data).toEqual({ value: 'still here' });
  }, 120_000);
});
