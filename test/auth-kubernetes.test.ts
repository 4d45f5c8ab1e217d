/**
 * The kubernetes auth method through the gateway, in both topologies with two workers (distributed:
 * the method runs in the auth-cloud process, two gateway replicas), against the fake API server,
 * which answers TokenReviews truthfully and only to a caller allowed to create them. A workload logs
 * in through one gateway and uses its token through the other; the CLI and node-vault log in as a
 * pod would.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import nodeVault from 'node-vault';
import { api, assertingCalls, createTestCa, initAndUnseal, runCli, startTopology, type ApiResponse, type Topology, type TopologyKind } from '@svc/testing';
import { startKubernetesApi, tamperedToken, type KubernetesApiEmulator } from './emulators/kubernetes-api';

describe.each<TopologyKind>(['all-in-one', 'distributed'])('kubernetes auth method, %s', (kind) => {
  let topology: Topology;
  let root: string;
  let kube: KubernetesApiEmulator;
  let caCert: string;
  let appUid: string;
  let reviewerJwt: string;
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-auth-kubernetes-e2e-'));

  /** The first gateway for logins, the last (another replica, distributed) for using the token. */
  const loginUrl = () => topology.urls[0];
  const useUrl = () => topology.urls[topology.urls.length - 1];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const call = (method: string, where: string, body?: unknown, token: string | undefined = root, url = loginUrl()): Promise<ApiResponse<Record<string, any>>> =>
    api(url, method, `/v1/${where}`, { token, body });
  const { ok, refused } = assertingCalls(call);
  /** The same calls through the other gateway. */
  const other = assertingCalls((method, where, body, token) => call(method, where, body, token, useUrl()));
  const login = (jwt: string, role = 'app') => call('POST', 'auth/kubernetes/login', { role, jwt }, undefined);

  beforeAll(async () => {
    const ca = createTestCa(path.join(dir, 'ca'), 'svc kubernetes e2e CA');
    caCert = readFileSync(ca.caCert, 'utf8');
    kube = await startKubernetesApi(ca.issue('kubernetes', ['127.0.0.1']));
    kube.addServiceAccount('svc', 'token-reviewer', { permissions: ['create tokenreviews', 'get namespaces'] });
    appUid = kube.addServiceAccount('payments', 'app').uid;
    kube.addServiceAccount('other', 'app');
    topology = await startTopology(kind, { services: ['auth-cloud'], workers: 2 });
    ({ rootToken: root } = await initAndUnseal(loginUrl()));
    await ok('POST', 'sys/auth/kubernetes', { type: 'kubernetes' });
    await ok('POST', 'auth/kubernetes/config', { kubernetes_host: kube.url, kubernetes_ca_cert: caCert, token_reviewer_jwt: (reviewerJwt = kube.issueToken('svc', 'token-reviewer')) });
    await ok('POST', 'sys/mounts/apps', { type: 'kv' });
    await ok('POST', 'apps/payments', { password: 'p4ss' });
    await ok('PUT', 'sys/policies/acl/payments', { policy: 'path "apps/payments" { capabilities = ["read"] }' });
    await ok('POST', 'auth/kubernetes/role/app', { bound_service_account_names: 'app', bound_service_account_namespaces: 'pay*', token_policies: 'payments', token_ttl: '1h', audience: 'svc' });
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    await kube?.close();
  });

  test('a pod logs in through one gateway with its service-account token and reads its secret through the other', async () => {
    const res = await login(kube.issueToken('payments', 'app', { audiences: ['svc'] }));
    expect(res.status).toBe(200);
    const auth = res.body.auth;
    expect(auth.policies.sort()).toEqual(['default', 'payments']);
    expect(auth).toMatchObject({
      metadata: { role: 'app', service_account_name: 'app', service_account_namespace: 'payments', service_account_uid: appUid },
      lease_duration: 3600,
      renewable: true,
    });
    expect(kube.calls).toContain('POST /apis/authentication.k8s.io/v1/tokenreviews');
    expect((await other.ok('GET', 'apps/payments', undefined, auth.client_token)).data).toEqual({ password: 'p4ss' });
    // The entity's alias is the service account's uid, with the documented metadata.
    const alias = (await ok('POST', 'identity/lookup/entity', { id: auth.entity_id })).data.aliases[0];
    expect(alias).toMatchObject({ name: appUid, mount_type: 'kubernetes', metadata: { service_account_name: 'app', service_account_namespace: 'payments', service_account_uid: appUid } });
    // Renewal asks the method again, through the other gateway.
    expect((await other.ok('POST', 'auth/token/renew-self', {}, auth.client_token)).auth).toMatchObject({ lease_duration: 3600 });
  });

  test('expired, tampered, wrong-audience and unbound-namespace tokens are refused; the reviewer token is never read back', async () => {
    const refusedLogin = async (jwt: string, status: number, message: RegExp) => {
      const res = await login(jwt);
      expect([res.status, res.body.errors?.join(' ')]).toEqual([status, expect.stringMatching(message)]);
      expect(res.text).not.toContain(jwt);
    };
    await refusedLogin(kube.issueToken('payments', 'app', { audiences: ['svc'], expiresIn: -120 }), 403, /expired/i);
    await refusedLogin(tamperedToken(kube.issueToken('other', 'app', { audiences: ['svc'] }), (claims) => {
      (claims['kubernetes.io'] as { namespace: string }).namespace = 'payments';
      claims.sub = 'system:serviceaccount:payments:app';
    }), 403, /permission denied|not authenticated|signature/i);
    await refusedLogin(kube.issueToken('payments', 'app', { audiences: ['elsewhere'] }), 403, /audience/i);
    await refusedLogin(kube.issueToken('other', 'app', { audiences: ['svc'] }), 403, /namespace/i);
    await refusedLogin('not-a-jwt', 400, /jwt|JWT/);
    const config = (await ok('GET', 'auth/kubernetes/config')).data;
    expect(config).toMatchObject({ kubernetes_host: kube.url, token_reviewer_jwt_set: true });
    expect(JSON.stringify(config)).not.toContain(reviewerJwt);
    await refused('POST', 'auth/kubernetes/role/bad', { bound_service_account_names: 'app' }, 400, /namespace/);
    await refused('POST', 'auth/kubernetes/config', { kubernetes_host: 'not a url' }, 400, /kubernetes_host/);
  });

  test('svc login -method=kubernetes and node-vault\'s kubernetesLogin log in unchanged', async () => {
    const tokenFile = path.join(dir, 'token');
    writeFileSync(tokenFile, `${kube.issueToken('payments', 'app', { audiences: ['svc'] })}\n`);
    const cli = await runCli(['login', '-method=kubernetes', '-token-only', 'role=app', `jwt=@${tokenFile}`], { SVC_ADDR: loginUrl(), HOME: dir });
    expect([cli.code, cli.stderr]).toEqual([0, '']);
    expect((await other.ok('GET', 'apps/payments', undefined, cli.stdout.trim())).data).toEqual({ password: 'p4ss' });

    const vault = nodeVault({ apiVersion: 'v1', endpoint: loginUrl() });
    // node-vault fills its default mount path only from the call's arguments, so callers name it.
    const answer = await vault.kubernetesLogin({ role: 'app', jwt: kube.issueToken('payments', 'app', { audiences: ['svc'] }), mount_point: 'kubernetes' });
    expect(answer.auth.policies.sort()).toEqual(['default', 'payments']);
  });
});
