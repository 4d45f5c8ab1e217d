/**
 * Issue 15, auto-unseal: the transit seal, with a second Secrets Service (a dev server started here)
 * as the provider, in both topologies. A TCP relay between the cluster and the provider stands for
 * the network, so the provider can be made unreachable without losing its in-memory transit key.
 */
import { PLAIN_LISTENER, TcpProxy, api, assertingCalls, eventually, restartEachGatewayAlone, runCli, startServerProcess, startTopology, type ApiResponse, type ServerProcess, type Topology, type TopologyKind } from '@svc/testing';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

const PROVIDER_ROOT = 'provider-root';
const SEAL_POLICY = 'path "transit/encrypt/autounseal" { capabilities = ["update"] }\npath "transit/decrypt/autounseal" { capabilities = ["update"] }\n';

/** The provider: a dev server with a transit key and a renewable token allowed only to use it. */
async function startProvider(): Promise<{ provider: ServerProcess; token: string }> {
  const provider = await startServerProcess('seal-provider', ['-dev', `-dev-root-token-id=${PROVIDER_ROOT}`, '-dev-listen-address=127.0.0.1:0']);
  const url = `http://${provider.addresses[0]}`;
  const call = async (method: string, where: string, body: unknown) => {
    const res = await api<Body>(url, method, `/v1/${where}`, { body, token: PROVIDER_ROOT });
    if (res.status >= 300) throw new Error(`${where}: ${res.status} ${res.text}`);
    return res.body;
  };
  await call('POST', 'sys/mounts/transit', { type: 'transit' });
  await call('POST', 'transit/keys/autounseal', {});
  await call('PUT', 'sys/policies/acl/autounseal', { policy: SEAL_POLICY });
  const created = await call('POST', 'auth/token/create', { policies: ['autounseal'], ttl: '1h', no_default_policy: true });
  return { provider, token: created.auth.client_token as string };
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('transit auto-unseal, %s', (kind) => {
  let provider: ServerProcess;
  let relay: TcpProxy;
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
    ({ provider } = await startProvider().then(async (started) => {
      relay = await TcpProxy.start(`http://${started.provider.addresses[0]}`);
      topology = await startTopology(kind, {
        gateways: gateways.length,
        listeners: [PLAIN_LISTENER],
        gatewayConfig: `seal "transit" {\n  address = "${relay.url}"\n  token = "${started.token}"\n  key_name = "autounseal"\n}\n`,
      });
      return started;
    }));
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    await relay?.stop();
    await provider?.stop();
  });

  it('initializes with recovery keys and unseals itself; seal status names the transit seal', async () => {
    const init = await ok('PUT', 'sys/init', { recovery_shares: 3, recovery_threshold: 2 });
    expect(init).toMatchObject({ keys: [], keys_base64: [], recovery_keys: [expect.any(String), expect.any(String), expect.any(String)] });
    expect(init.recovery_keys_base64).toHaveLength(3);
    root = init.root_token;
    recoveryKeys = init.recovery_keys;
    await everyGateway(false);
    for (const url of topology.urls) {
      expect((await call('GET', 'sys/seal-status', undefined, undefined, url)).body).toMatchObject({ type: 'transit', initialized: true, sealed: false, t: 2, n: 3, recovery_seal: true });
    }
    await ok('PUT', 'secret/kept', { value: 'still here' }, root);
  });

  it('never unseals with recovery keys, refuses unseal-key fields and sys/rekey', async () => {
    await refused('PUT', 'sys/unseal', { key: recoveryKeys[0] }, 400, /recovery keys cannot unseal/);
    await refused('PUT', 'sys/rekey/init', { secret_shares: 1, secret_threshold: 1 }, 400, /no unseal keys.*sys\/rekey-recovery-key/);
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
  });

  it('with the provider unreachable at start: sealed, 503 and a log line; unseals once it returns', async () => {
    relay.partition('closed');
    await Promise.all(gateways.map((name) => topology.restartProcess(name)));
    for (const url of topology.urls) {
      expect((await call('GET', 'sys/seal-status', undefined, undefined, url)).body).toMatchObject({ initialized: true, sealed: true });
      const read = await call('GET', 'secret/kept', undefined, root, url);
      expect(read.status).toBe(503);
    }
    for (const process of topology.processes.filter((p) => gateways.includes(p.name))) {
      expect(process.logs.join('\n')).toMatch(/the seal could not unseal the service; it stays sealed and tries again/);
    }
    relay.heal();
    await everyGateway(false);
    expect((await ok('GET', 'secret/kept', undefined, root)).data).toEqual({ value: 'still here' });
  }, 120_000);
});
