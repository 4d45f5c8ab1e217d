/**
 * The jwt/oidc auth method through the gateway, in both topologies with two workers (distributed:
 * the method runs in the auth-cloud process, two gateway replicas), against the test OIDC provider:
 * a CI pipeline's JWT and a person's sign-in by redirect, groups mapped to external identity groups,
 * key rotation at the provider, and an OIDC callback replayed. Logins go through one gateway, the
 * tokens are used through the other; the CLI and node-vault log in unchanged.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import nodeVault from 'node-vault';
import { SVC_BIN } from '@svc/local-cluster';
import { api, assertingCalls, closedPort, initAndUnseal, startTopology, type ApiResponse, type Topology, type TopologyKind } from '@svc/testing';
import { startOidcProvider, type OidcProvider } from './emulators/oidc-provider';

/** Follows the provider's authorization URL as a browser would, up to the redirect back; returns where it sends the browser. */
async function signInAtProvider(authUrl: string): Promise<URL> {
  const res = await fetch(authUrl, { redirect: 'manual' });
  expect(res.status).toBe(302);
  return new URL(res.headers.get('location')!);
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('jwt/oidc auth method, %s', (kind) => {
  let topology: Topology;
  let root: string;
  let provider: OidcProvider;
  let cliPort: number;
  const home = mkdtempSync(path.join(tmpdir(), 'svc-auth-jwt-e2e-'));
  const loginUrl = () => topology.urls[0];
  const useUrl = () => topology.urls[topology.urls.length - 1];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const call = (method: string, where: string, body?: unknown, token: string | undefined = root, url = loginUrl()): Promise<ApiResponse<Record<string, any>>> =>
    api(url, method, `/v1/${where}`, { token, body });
  const { ok, refused } = assertingCalls(call);
  const other = assertingCalls((method, where, body, token) => call(method, where, body, token, useUrl()));
  const ciClaims = { sub: 'repo:org/app:ref:main', aud: 'svc', repository: 'org/app', groups: ['deployers', 'unknown'] };

  beforeAll(async () => {
    provider = await startOidcProvider();
    cliPort = await closedPort();
    topology = await startTopology(kind, { services: ['auth-cloud'], workers: 2 });
    ({ rootToken: root } = await initAndUnseal(loginUrl()));
    await ok('POST', 'sys/mounts/apps', { type: 'kv' });
    await ok('POST', 'apps/deploy-key', { key: 'k3y' });
    await ok('PUT', 'sys/policies/acl/deploy', { policy: 'path "apps/deploy-key" { capabilities = ["read"] }' });

    await ok('POST', 'sys/auth/jwt', { type: 'jwt' });
    await ok('POST', 'auth/jwt/config', { oidc_discovery_url: provider.url, bound_issuer: provider.issuer });
    await ok('POST', 'auth/jwt/role/ci', {
      role_type: 'jwt',
      user_claim: 'sub',
      bound_audiences: 'svc',
      bound_claims_type: 'glob',
      bound_claims: { repository: 'org/*' },
      claim_mappings: { repository: 'repo' },
      groups_claim: 'groups',
      token_ttl: '10m',
    });
    // The policy comes only through the external group the provider's groups claim names.
    const jwtAccessor = (await ok('GET', 'sys/auth')).data['jwt/'].accessor;
    const group = await ok('POST', 'identity/group', { name: 'deployers', type: 'external', policies: 'deploy' });
    await ok('POST', 'identity/group-alias', { name: 'deployers', mount_accessor: jwtAccessor, canonical_id: group.data.id });

    await ok('POST', 'sys/auth/oidc', { type: 'oidc' });
    await ok('POST', 'auth/oidc/config', { oidc_discovery_url: provider.url, oidc_client_id: provider.clientId, oidc_client_secret: provider.clientSecret, default_role: 'person' });
    await ok('POST', 'auth/oidc/role/person', {
      user_claim: 'email',
      allowed_redirect_uris: ['https://app.example/callback', `http://localhost:${cliPort}/oidc/callback`],
      token_policies: 'deploy',
    });
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    await provider?.close();
  });

  test('a CI job logs in with its JWT; its groups claim makes it a member of the external group whose policy reads the secret', async () => {
    const res = await call('POST', 'auth/jwt/login', { role: 'ci', jwt: provider.mint(ciClaims) }, undefined);
    expect(res.status).toBe(200);
    const auth = res.body.auth;
    expect(auth).toMatchObject({ token_policies: ['default'], identity_policies: ['deploy'], metadata: { role: 'ci', repo: 'org/app' }, lease_duration: 600 });
    expect((await other.ok('GET', 'apps/deploy-key', undefined, auth.client_token)).data).toEqual({ key: 'k3y' });
    const entity = (await other.ok('GET', `identity/entity/id/${auth.entity_id}`)).data;
    expect(entity.aliases[0]).toMatchObject({ name: ciClaims.sub, mount_type: 'jwt', metadata: { repo: 'org/app' } });
    expect(entity.direct_group_ids).toHaveLength(1);
  });

  test('expired, wrong-audience, wrong-issuer, tampered and unbound tokens are refused with a 403 that never quotes them', async () => {
    const cases: [string, string][] = [
      ['expired', provider.mint(ciClaims, { expired: true })],
      ['wrong audience', provider.mint({ ...ciClaims, aud: 'elsewhere' })],
      ['wrong issuer', provider.mint({ ...ciClaims, iss: 'https://evil.example' })],
      ['tampered', provider.mint(ciClaims, { tampered: true })],
      ['signed by another key', provider.mint(ciClaims, { wrongKey: true })],
      ['unbound claim', provider.mint({ ...ciClaims, repository: 'someone/else' })],
    ];
    for (const [what, jwt] of cases) {
      const res = await call('POST', 'auth/jwt/login', { role: 'ci', jwt }, undefined);
      expect([what, res.status, res.text.includes(jwt)]).toEqual([what, 403, false]);
    }
    await refused('POST', 'auth/jwt/role/bad', { role_type: 'jwt' }, 400, /user_claim/);
    await refused('POST', 'auth/jwt/config', { oidc_discovery_url: provider.url, jwks_url: `${provider.url}/jwks` }, 400, /oidc_discovery_url|jwks_url/);
  });

  test('after the provider rotates its keys, tokens signed with the new key log in without a restart; node-vault\'s jwtLogin works unchanged', async () => {
    provider.rotateKeys();
    const vault = nodeVault({ apiVersion: 'v1', endpoint: loginUrl() });
    const answer = await vault.jwtLogin({ role: 'ci', jwt: provider.mint(ciClaims) });
    expect(answer.auth.identity_policies).toEqual(['deploy']);
  });

  test('a person signs in by redirect: auth_url through one gateway, the callback through the other, and a replayed callback is refused', async () => {
    provider.signInAs({ sub: 'u-1', email: 'ada@example.com' });
    const { data } = await ok('POST', 'auth/oidc/oidc/auth_url', { role: 'person', redirect_uri: 'https://app.example/callback' }, undefined);
    const back = await signInAtProvider(data.auth_url);
    expect(back.origin + back.pathname).toBe('https://app.example/callback');
    const query = `state=${back.searchParams.get('state')}&code=${back.searchParams.get('code')}`;
    const signedIn = await other.ok('GET', `auth/oidc/oidc/callback?${query}`, undefined, undefined);
    expect(signedIn.auth).toMatchObject({ metadata: { role: 'person' }, policies: expect.arrayContaining(['deploy']) });
    expect((await other.ok('GET', 'apps/deploy-key', undefined, signedIn.auth.client_token)).data).toEqual({ key: 'k3y' });
    const replay = await call('GET', `auth/oidc/oidc/callback?${query}`, undefined, undefined);
    expect([replay.status, replay.body.errors?.join(' ')]).toEqual([400, expect.stringMatching(/state/i)]);
    await refused('POST', 'auth/oidc/oidc/auth_url', { role: 'person', redirect_uri: 'https://evil.example/callback' }, 400, /redirect/);
  });

  test('svc login -method=oidc prints the provider\'s URL and takes the redirect on localhost', async () => {
    provider.signInAs({ sub: 'u-2', email: 'grace@example.com' });
    const cli = spawn(process.execPath, [SVC_BIN, 'login', '-method=oidc', '-token-only', `port=${cliPort}`], { env: { ...process.env, SVC_ADDR: loginUrl(), HOME: home } });
    const exited = new Promise<number>((resolve) => cli.on('close', (exit) => resolve(exit ?? -1)));
    let stdout = '';
    let stderr = '';
    cli.stdout.on('data', (chunk) => (stdout += chunk));
    const authUrl = await new Promise<string>((resolve, reject) => {
      cli.stderr.on('data', (chunk) => {
        stderr += chunk;
        const found = /(http\S+\/authorize\S*)/.exec(stderr);
        if (found) resolve(found[1]);
      });
      cli.on('close', () => reject(new Error(`svc login ended before printing the URL: ${stderr}`)));
    });
    const back = await signInAtProvider(authUrl);
    expect(back.href.startsWith(`http://localhost:${cliPort}/oidc/callback?`)).toBe(true);
    const page = await fetch(back.href);
    expect([page.status, await page.text()]).toEqual([200, expect.stringContaining('Signed in')]);
    expect([await exited, stderr]).toEqual([0, expect.stringContaining('Waiting for OIDC authentication')]);
    expect((await other.ok('GET', 'apps/deploy-key', undefined, stdout.trim())).data).toEqual({ key: 'k3y' });
  });
});
