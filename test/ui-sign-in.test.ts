/**
 * Signing in to the web UI through an identity provider, in a real browser (Debian's Chromium
 * through playwright-core), in both topologies: the sign-in screen offers the auth mounts listed
 * for it, an OIDC mount signs in by redirect to the test provider and back, and a JWT pasted into
 * the jwt method signs in too.
 */
import type { Browser, Page } from 'playwright-core';
import { api, artifactPath, assertingCalls, initAndUnseal, launchBrowser, startTopology, type ApiCall, type Topology, type TopologyKind } from '@svc/testing';
import { startOidcProvider, type OidcProvider } from './emulators/oidc-provider';

describe.each<TopologyKind>(['all-in-one', 'distributed'])('web UI sign-in with an identity provider, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let browser: Browser;
  let page: Page;
  let provider: OidcProvider;
  let root = '';

  const call: ApiCall = async (method, where, body, token = root) => api(url, method, `/v1/${where}`, { token, body });
  const { ok } = assertingCalls(call);
  const sessionToken = async () => (JSON.parse((await page.evaluate<string | null>("sessionStorage.getItem('svc-ui-session')")) ?? '{}') as { token?: string }).token;

  beforeAll(async () => {
    provider = await startOidcProvider();
    [topology, browser] = await Promise.all([startTopology(kind, { gatewayConfig: 'ui = true\n', services: ['auth-cloud'] }), launchBrowser()]);
    url = topology.urls[0];
    ({ rootToken: root } = await initAndUnseal(url));
    await ok('PUT', 'sys/policies/acl/reader', { policy: 'path "secret/*" { capabilities = ["read"] }' });
    await ok('POST', 'sys/auth/sso', { type: 'oidc', config: { listing_visibility: 'unauth' } });
    await ok('POST', 'auth/sso/config', { oidc_discovery_url: provider.url, oidc_client_id: provider.clientId, oidc_client_secret: provider.clientSecret, default_role: 'people' });
    await ok('POST', 'auth/sso/role/people', { user_claim: 'email', allowed_redirect_uris: `${url}/ui/vault/auth/sso/oidc/callback`, token_policies: 'reader' });
    await ok('POST', 'sys/auth/jwt', { type: 'jwt' });
    await ok('POST', 'auth/jwt/config', { jwks_url: `${provider.url}/jwks` });
    await ok('POST', 'auth/jwt/role/ci', { role_type: 'jwt', user_claim: 'sub', bound_audiences: 'svc', token_policies: 'reader' });
  }, 120_000);

  beforeEach(async () => {
    page = await browser.newPage();
  });

  afterEach(async () => {
    await page.screenshot({ path: artifactPath(`sign-in-${kind}-${expect.getState().currentTestName?.split(' ').pop()}.png`), fullPage: true });
    await page.close();
  });

  afterAll(async () => {
    await browser?.close();
    await topology?.stop();
    await provider?.close();
  });

  test('the listed OIDC mount is offered first and signs in by redirect to the provider and back: oidc', async () => {
    provider.signInAs({ sub: 'u-7', email: 'ada@example.com' });
    await page.goto(`${url}/ui/`);
    // Once the server's list is in, its mount is the first choice and the one chosen.
    const method = page.getByLabel('Method');
    await method.locator('option', { hasText: 'sso/ (oidc)' }).waitFor({ state: 'attached' });
    await expect(method.locator('option').first().textContent()).resolves.toBe('sso/ (oidc)');
    await page.getByRole('button', { name: 'Sign in with the identity provider' }).click();
    await page.getByRole('heading', { name: 'Secrets engines' }).waitFor();
    expect(page.url()).toBe(`${url}/ui/secrets`);
    expect(provider.requests.authorize).toBeGreaterThan(0);
    const token = await sessionToken();
    const self = (await api(url, 'GET', '/v1/auth/token/lookup-self', { token })).body.data;
    expect(self).toMatchObject({ meta: { role: 'people' }, policies: expect.arrayContaining(['reader']) });
  });

  test('a callback whose state the server does not know shows the refusal and a way back: replay', async () => {
    await page.goto(`${url}/ui/vault/auth/sso/oidc/callback?state=unknown&code=nothing`);
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/state/i);
    await page.getByRole('link', { name: 'Back to the sign-in' }).click();
    await page.getByRole('button', { name: 'Sign in with the identity provider' }).waitFor();
    expect(await sessionToken()).toBeUndefined();
  });

  test('a JWT pasted into the jwt method signs in: jwt', async () => {
    await page.goto(`${url}/ui/`);
    await page.getByLabel('Method').selectOption({ label: 'jwt' });
    await page.getByRole('textbox', { name: 'Role' }).fill('ci');
    await page.getByRole('textbox', { name: 'JWT' }).fill(provider.mint({ sub: 'pipeline-1', aud: 'svc' }));
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Secrets engines' }).waitFor();
    const self = (await api(url, 'GET', '/v1/auth/token/lookup-self', { token: await sessionToken() })).body.data;
    expect(self).toMatchObject({ meta: { role: 'ci' } });
  });
});
