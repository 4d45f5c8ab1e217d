/**
 * Issue 21: the web UI in a real browser (Debian's Chromium through playwright-core) — init,
 * unseal, sign in, write and read a KV secret, edit a policy, seal — how the gateway serves it,
 * and the sys/internal/ui endpoints it and other clients rely on, in both topologies.
 */
import type { Browser, Page } from 'playwright-core';
import { api, artifactPath, assertingCalls, initAndUnseal, launchBrowser, startTopology, type ApiCall, type Topology, type TopologyKind } from '@svc/testing';

/** Controls whose accessible name is missing: a line of the ARIA snapshot with a control role and no name. */
const UNNAMED_CONTROL = /^\s*- (button|textbox|combobox|checkbox|link|spinbutton)(\s*\[[^\]]*\])?\s*(:.*)?$/m;

describe.each<TopologyKind>(['all-in-one', 'distributed'])('web UI, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let browser: Browser;
  let page: Page;
  /** Learnt through the UI in the first test, used by the API checks after it. */
  let rootToken = '';
  let unsealKeys: string[] = [];

  const call: ApiCall = async (method, where, body, token = rootToken) => api(url, method, `/v1/${where}`, { token, body });
  const { ok, refused } = assertingCalls(call);
  /** The same assertions for calls with another token ('' for none). */
  const as = (token: string) => assertingCalls((method, where, body) => call(method, where, body, token));

  const shot = (step: string) => page.screenshot({ path: artifactPath(`${kind}-${step}.png`), fullPage: true });
  /** An answer the page shows (a labelled JSON view). */
  const answer = (label: string) => page.locator(`pre[aria-label="${label}"]`);
  /** Waits until the answer shows `text`: the page updates when the server has answered. */
  const shown = (label: string, text: string) => answer(label).filter({ hasText: text }).waitFor();
  /** Every control on the page has an accessible name. */
  const expectNamedControls = async () => expect(await page.locator('body').ariaSnapshot()).not.toMatch(UNNAMED_CONTROL);

  beforeAll(async () => {
    [topology, browser] = await Promise.all([startTopology(kind, { gatewayConfig: 'ui = true\n' }), launchBrowser()]);
    url = topology.urls[0];
    page = await browser.newPage();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await topology?.stop();
  });

  test('init → unseal → sign in → write a KV secret → read it → edit a policy → seal', async () => {
    // A failure leaves a picture of the page it happened on.
    await browserFlow().catch(async (err: unknown) => {
      await shot('failure');
      throw err;
    });
  });

  const browserFlow = async () => {
    // `/` leads to the UI, which offers to initialize a new server.
    await page.goto(`${url}/`);
    expect(page.url()).toBe(`${url}/ui/`);
    await page.getByLabel('Number of keys').fill('3');
    await page.getByLabel('Threshold: keys needed').fill('2');
    await expectNamedControls();
    await shot('1-init');
    await page.getByRole('button', { name: 'Initialize' }).click();
    unsealKeys = JSON.parse((await answer('keys').textContent()) ?? '') as string[];
    rootToken = JSON.parse((await answer('root token').textContent()) ?? '') as string;
    expect(unsealKeys).toHaveLength(3);
    await page.getByRole('button', { name: 'Continue' }).click();

    // Two of the three keys unseal it; the page shows the progress between them.
    await page.getByLabel('Unseal key').fill(unsealKeys[0]);
    await page.getByRole('button', { name: 'Unseal' }).click();
    await page.getByText('1 of 2 given').waitFor();
    await shot('2-unseal');
    await page.getByLabel('Unseal key').fill(unsealKeys[1]);
    await page.getByRole('button', { name: 'Unseal' }).click();

    // A wrong token is refused with the server's message; the root token signs in.
    await page.getByRole('textbox', { name: 'Token' }).fill('s.not-a-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('403');
    await expectNamedControls();
    await page.getByRole('textbox', { name: 'Token' }).fill(rootToken);
    await shot('3-login');
    await page.getByRole('button', { name: 'Sign in' }).click();

    // Enable KV version 2 and write a secret through the form; it is read back on its page.
    await page.getByRole('heading', { name: 'Secrets engines' }).waitFor();
    expect((await api(url, 'GET', '/v1/auth/token/lookup-self', { token: rootToken })).status).toBe(200);
    await page.getByLabel('Type').selectOption('kv');
    await page.getByLabel('Path', { exact: true }).fill('app-secrets');
    await page.getByRole('button', { name: 'Enable engine' }).click();
    await page.getByRole('link', { name: 'app-secrets/' }).click();
    await page.getByLabel('Secret path').fill('team/db');
    await page.getByLabel('Secret data (JSON)').fill('{"password": "correct horse"}');
    await page.getByRole('button', { name: 'Save secret' }).click();
    await shown('Secret data', 'correct horse');
    await expectNamedControls();
    await shot('4-kv-secret');
    const stored = await ok('GET', 'app-secrets/data/team/db');
    expect(stored.data).toMatchObject({ data: { password: 'correct horse' }, metadata: { version: 1 } });

    // A new version through the edit form; the browser lists the secret under its directory.
    await page.getByRole('textbox', { name: 'Secret data (JSON)' }).fill('{"password": "battery staple"}');
    await page.getByRole('button', { name: 'Save new version' }).click();
    await shown('Secret data', 'battery staple');
    expect((await ok('GET', 'app-secrets/data/team/db')).data).toMatchObject({ data: { password: 'battery staple' }, metadata: { version: 2 } });
    await page.getByRole('link', { name: 'Back to the list' }).click();
    await page.getByRole('list', { name: 'Secrets' }).getByRole('link', { name: 'db' }).waitFor();

    // Create a policy, then edit its HCL; the server holds the edited text.
    await page.getByRole('link', { name: 'Policies', exact: true }).click();
    await page.getByLabel('Policy name').fill('readers');
    await page.getByRole('button', { name: 'Create policy' }).click();
    const edited = 'path "app-secrets/data/team/*" {\n  capabilities = ["read", "list"]\n}\n';
    await page.getByRole('form', { name: 'Edit policy' }).getByLabel('Policy (HCL)').fill(edited);
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByRole('status').filter({ hasText: 'Policy saved.' }).waitFor();
    await expectNamedControls();
    await shot('5-policy');
    expect((await ok('GET', 'sys/policies/acl/readers')).data.policy).toBe(edited);

    // The capabilities check answers for the signed-in (root) token.
    await page.getByRole('link', { name: 'Policies', exact: true }).click();
    await page.getByLabel('Paths (comma-separated)').fill('app-secrets/data/team/db');
    await page.getByRole('button', { name: 'Check' }).click();
    await shown('Capabilities', '"root"');

    // Seal: the UI goes back to the unseal screen and the server is sealed.
    await page.getByRole('link', { name: 'Seal', exact: true }).click();
    await page.getByRole('button', { name: 'Seal the server' }).click();
    await page.getByRole('heading', { name: 'Unseal' }).waitFor();
    await shot('6-sealed');
    expect((await api(url, 'GET', '/v1/sys/seal-status')).body).toMatchObject({ sealed: true });
  };

  test('the gateway serves the UI with a strict CSP, hashed assets cached for good and app routes falling back to the page', async () => {
    const index = await api(url, 'GET', '/ui/');
    expect(index.status).toBe(200);
    expect(index.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(index.headers['content-security-policy']).toContain("default-src 'none'");
    expect(index.headers['content-security-policy']).toContain("script-src 'self'");
    expect(index.headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(index.headers['cache-control']).toBe('no-cache');
    const script = /src="(\/ui\/assets\/[^"]+\.js)"/.exec(index.text)?.[1];
    expect(script).toBeDefined();
    const asset = await api(url, 'GET', script!);
    expect([asset.status, asset.headers['content-type'], asset.headers['cache-control']]).toEqual([200, 'text/javascript; charset=utf-8', 'public, max-age=31536000, immutable']);
    const route = await api(url, 'GET', '/ui/secrets/app-secrets/team/db');
    expect([route.status, route.text]).toEqual([200, index.text]);
    expect((await api(url, 'GET', '/ui/assets/missing-abc123.js')).status).toBe(404);
    const root = await api(url, 'GET', '/');
    expect([root.status, root.headers.location]).toEqual([307, '/ui/']);
  });

  describe('sys/internal/ui, sys/tools and sys/step-down', () => {
    let limited = '';

    beforeAll(async () => {
      // The browser test above leaves the server initialized and sealed; these checks stand on their own if it did not get that far.
      const status = (await api(url, 'GET', '/v1/sys/seal-status')).body;
      if (!status.initialized) ({ rootToken, keys: unsealKeys } = await initAndUnseal(url, 3, 2));
      else for (const key of unsealKeys.slice(0, 2)) await ok('PUT', 'sys/unseal', { key });
      await ok('POST', 'sys/mounts/team-kv', { type: 'kv', options: { version: '2' } });
      await ok('POST', 'sys/mounts/hidden-kv', { type: 'kv', options: { version: '2' } });
      await ok('POST', 'sys/mounts/public-kv', { type: 'kv', config: { listing_visibility: 'unauth' } });
      await ok('POST', 'sys/auth/people', { type: 'userpass' });
      await ok('POST', 'sys/auth/people/tune', { listing_visibility: 'unauth' });
      await ok('PUT', 'sys/policies/acl/team-readers', { policy: 'path "team-kv/data/team/*" { capabilities = ["read", "list"] }\npath "denied-kv/*" { capabilities = ["deny"] }' });
      await ok('POST', 'sys/mounts/denied-kv', { type: 'kv' });
      await ok('POST', 'sys/namespaces/team-a', {});
      await ok('POST', 'sys/namespaces/team-b', {});
      limited = (await ok('POST', 'auth/token/create', { policies: ['team-readers'] })).auth.client_token as string;
    });

    test('mounts: a token sees the mounts its policies reach, anyone sees those tuned listing_visibility = "unauth"', async () => {
      const anonymous = await ok('GET', 'sys/internal/ui/mounts', undefined, '');
      expect(anonymous.data).toEqual({
        secret: { 'public-kv/': { type: 'kv', description: '', options: null } },
        auth: { 'people/': { type: 'userpass', description: '', options: null } },
      });
      const asLimited = await ok('GET', 'sys/internal/ui/mounts', undefined, limited);
      // Reached by the policy: team-kv/; listed for everyone: public-kv/; the token's default policy reaches cubbyhole/ and sys/.
      expect(Object.keys(asLimited.data.secret).sort()).toEqual(['cubbyhole/', 'public-kv/', 'sys/', 'team-kv/']);
      expect(asLimited.data.secret['team-kv/']).toMatchObject({ type: 'kv', options: { version: '2' }, accessor: expect.any(String) });
      expect(Object.keys(asLimited.data.auth)).toEqual(expect.arrayContaining(['people/', 'token/']));
      const asRoot = await ok('GET', 'sys/internal/ui/mounts');
      expect(Object.keys(asRoot.data.secret)).toEqual(expect.arrayContaining(['team-kv/', 'hidden-kv/', 'denied-kv/', 'public-kv/']));
      await as('s.no-such-token').refused('GET', 'sys/internal/ui/mounts', undefined, 403, /permission denied/);
    });

    test('mounts/:path: only to a token that reaches the mount, and never without one', async () => {
      const mount = await ok('GET', 'sys/internal/ui/mounts/team-kv/data/team/db', undefined, limited);
      expect(mount.data).toMatchObject({ path: 'team-kv/', type: 'kv', options: { version: '2' } });
      expect((await ok('GET', 'sys/internal/ui/mounts/auth/token', undefined, limited)).data).toMatchObject({ path: 'auth/token/', type: 'token' });
      await as(limited).refused('GET', 'sys/internal/ui/mounts/hidden-kv', undefined, 403, /ensure client's policies grant access to path "hidden-kv"/);
      await as(limited).refused('GET', 'sys/internal/ui/mounts/denied-kv', undefined, 403, /grant access/);
      await as(limited).refused('GET', 'sys/internal/ui/mounts/no-such-mount', undefined, 403, /grant access/);
      await as('').refused('GET', 'sys/internal/ui/mounts/team-kv', undefined, 403, /grant access/);
    });

    test('resultant-acl: the token\'s rules, exact apart from globs; root says so', async () => {
      const acl = await ok('GET', 'sys/internal/ui/resultant-acl', undefined, limited);
      expect(acl.data.root).toBe(false);
      expect(acl.data.glob_paths['team-kv/data/team/']).toEqual({ capabilities: ['list', 'read'] });
      expect(acl.data.glob_paths['denied-kv/']).toEqual({ capabilities: ['deny'] });
      expect(acl.data.exact_paths['sys/internal/ui/resultant-acl']).toEqual({ capabilities: ['read'] });
      expect((await ok('GET', 'sys/internal/ui/resultant-acl')).data).toEqual({ root: true, exact_paths: {}, glob_paths: {} });
      await as('').refused('GET', 'sys/internal/ui/resultant-acl', undefined, 403, /permission denied/);
    });

    test('namespaces, version and feature flags', async () => {
      expect((await ok('GET', 'sys/internal/ui/namespaces')).data.keys).toEqual(['team-a/', 'team-b/']);
      expect((await ok('GET', 'sys/internal/ui/namespaces', undefined, limited)).data.keys).toEqual([]);
      expect((await ok('GET', 'sys/internal/ui/namespaces', undefined, '')).data.keys).toEqual([]);
      expect((await ok('GET', 'sys/internal/ui/version', undefined, '')).data.version).toMatch(/^\d+\.\d+\.\d+/);
      expect(await ok('GET', 'sys/internal/ui/feature-flags', undefined, '')).toEqual({ feature_flags: [] });
    });

    test('sys/tools/random and sys/tools/hash answer as transit\'s do; bad input is a 400', async () => {
      const random = await ok('POST', 'sys/tools/random/16', { format: 'hex' });
      expect(random.data.random_bytes).toMatch(/^[0-9a-f]{32}$/);
      const hash = await ok('POST', 'sys/tools/hash/sha2-256', { input: Buffer.from('hello').toString('base64') });
      expect(hash.data.sum).toBe('2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824');
      await refused('POST', 'sys/tools/random', { bytes: 0 }, 400, /bytes must be between/);
      await refused('POST', 'sys/tools/hash', { input: 'not base64!' }, 400, /input/);
    });

    test('sys/step-down needs sudo', async () => {
      await as(limited).refused('PUT', 'sys/step-down', undefined, 403, /permission denied/);
      await ok('PUT', 'sys/step-down');
    });
  });
});

describe('web UI turned off', () => {
  let topology: Topology;
  beforeAll(async () => {
    topology = await startTopology('all-in-one');
  }, 120_000);
  afterAll(() => topology?.stop());

  test('with ui = false nothing is served under /ui/ and / does not redirect', async () => {
    const url = topology.urls[0];
    for (const path of ['/', '/ui', '/ui/', '/ui/secrets']) {
      const res = await api(url, 'GET', path);
      expect([path, res.status, res.body]).toEqual([path, 404, { errors: ['unsupported path'] }]);
    }
  });
});
