import type { AuthResponse } from '@svc/framework';
import { refusal, type MountedBackend } from '@svc/testing';
import { startOidcProvider, type OidcProvider } from '../../../test/emulators/oidc-provider';
import { jwtMounts, sameMount, timedRefusal, TEST_DEADLINE_MS } from './testing/mount';

const REDIRECT_URI = 'http://localhost:8250/oidc/callback';

describe('jwt auth method: OIDC logins', () => {
  let provider: OidcProvider;
  let jwt: MountedBackend;
  const mountJwt = jwtMounts();

  beforeAll(async () => {
    provider = await startOidcProvider();
  });
  afterAll(() => provider.close());

  const oidcConfig = () => ({ oidc_discovery_url: provider.url, oidc_client_id: provider.clientId, oidc_client_secret: provider.clientSecret });

  async function mountWithRole(options: Parameters<typeof mountJwt>[0] = {}): Promise<MountedBackend> {
    const mounted = await mountJwt(options);
    await mounted.write('config', oidcConfig());
    await mounted.write('role/web', {
      user_claim: 'email',
      allowed_redirect_uris: REDIRECT_URI,
      groups_claim: 'groups',
      claim_mappings: { name: 'full_name' },
      oidc_scopes: 'email,profile',
      token_policies: 'web',
    });
    return mounted;
  }

  beforeEach(async () => {
    jwt = await mountWithRole();
    provider.signInAs({ sub: 'user-1', email: 'ada@example.com', name: 'Ada', groups: ['admins'] });
  });

  const authUrl = async (body: Record<string, unknown> = {}, mounted = jwt): Promise<URL> =>
    new URL((await mounted.write('oidc/auth_url', { role: 'web', redirect_uri: REDIRECT_URI, ...body })).auth_url as string);

  /** The browser at the provider: the query of the redirect back (code and state, or an error). */
  async function visit(url: URL): Promise<Record<string, string>> {
    const res = await fetch(url, { redirect: 'manual' });
    expect(res.status).toBe(302);
    return Object.fromEntries(new URL(res.headers.get('location')!).searchParams);
  }

  const callback = async (params: Record<string, string>, mounted = jwt): Promise<AuthResponse> => (await mounted.request('read', 'oidc/callback', params))!.auth!;

  const EXPIRED_STATE = { status: 400, message: 'OIDC login failed: expired or missing OAuth state' };

  it('logs in through the provider: auth_url (state, nonce, PKCE S256), the redirect back, the callback', async () => {
    const url = await authUrl({ client_nonce: 'client-1' });
    expect(url.origin + url.pathname).toBe(`${provider.url}/authorize`);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      client_id: provider.clientId,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope: 'openid email profile',
      state: expect.any(String),
      nonce: expect.any(String),
      code_challenge: expect.stringMatching(/^[\w-]{43}$/),
      code_challenge_method: 'S256',
    });
    const answer = await visit(url);
    expect(answer.state).toBe(url.searchParams.get('state'));
    expect(await callback({ ...answer, client_nonce: 'client-1' })).toMatchObject({
      policies: ['web'],
      displayName: 'ada@example.com',
      alias: { name: 'ada@example.com', metadata: { full_name: 'Ada', role: 'web' } },
      metadata: { full_name: 'Ada', role: 'web' },
      groupAliases: ['admins'],
      internalData: { role: 'web' },
    });
    expect(await jwt.storage.list('oidc-state/')).toEqual([]);
  });

  it('takes a state once: a replayed callback, an unknown or a missing state are refused', async () => {
    const answer = await visit(await authUrl());
    expect(await callback(answer)).toBeDefined();
    expect(await refusal(callback(answer))).toEqual(EXPIRED_STATE);
    expect(await refusal(callback({ ...answer, state: 'made-up' }))).toEqual(EXPIRED_STATE);
    expect(await refusal(callback({ code: answer.code }))).toEqual({ status: 400, message: 'missing required field "state"' });
  });

  it('lets one of two concurrent callbacks with the same state through', async () => {
    const answer = await visit(await authUrl());
    const outcomes = await Promise.allSettled([callback(answer), callback(answer, sameMount(jwt))]);
    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
  });

  it('completes a login started in another process (the state is in storage)', async () => {
    const answer = await visit(await authUrl());
    expect(await callback(answer, sameMount(jwt))).toMatchObject({ alias: { name: 'ada@example.com' } });
  });

  it('refuses a redirect_uri the role does not allow; a loopback one may use another port', async () => {
    expect(await refusal(authUrl({ redirect_uri: 'https://evil.example/oidc/callback' }))).toEqual({
      status: 400,
      message: 'field "redirect_uri": "https://evil.example/oidc/callback" is not one of the role\'s allowed_redirect_uris',
    });
    expect(await refusal(authUrl({ redirect_uri: 'http://localhost:8250/elsewhere' }))).toMatchObject({ status: 400 });
    expect(await refusal(authUrl({ redirect_uri: 'callback' }))).toEqual({ status: 400, message: 'field "redirect_uri": "callback" is not a URL' });
    const url = await authUrl({ redirect_uri: 'http://localhost:9999/oidc/callback' });
    expect(url.searchParams.get('redirect_uri')).toBe('http://localhost:9999/oidc/callback');
    expect(await callback(await visit(url))).toBeDefined();
  });

  it('moves a namespace in the redirect URI into the state', async () => {
    const url = await authUrl({ redirect_uri: `${REDIRECT_URI}?namespace=team-a` });
    expect(url.searchParams.get('redirect_uri')).toBe(REDIRECT_URI);
    expect(url.searchParams.get('state')).toMatch(/,ns=team-a$/);
    expect(await callback(await visit(url))).toBeDefined();
  });

  it('refuses a callback whose client_nonce is not the one given to auth_url, and spends the state', async () => {
    const answer = await visit(await authUrl({ client_nonce: 'client-1' }));
    expect(await refusal(callback({ ...answer, client_nonce: 'client-2' }))).toEqual({ status: 400, message: 'OIDC login failed: invalid client_nonce' });
    expect(await refusal(callback({ ...answer, client_nonce: 'client-1' }))).toEqual(EXPIRED_STATE);
    const again = await visit(await authUrl({ client_nonce: 'client-1' }));
    expect(await refusal(callback(again))).toEqual({ status: 400, message: 'OIDC login failed: invalid client_nonce' });
  });

  it('refuses a code the provider refuses, and a provider\'s error', async () => {
    const answer = await visit(await authUrl());
    expect(await refusal(callback({ ...answer, code: 'made-up' }))).toEqual({ status: 400, message: 'OIDC login failed: the provider refused the code: invalid_grant' });
    const denied = await visit(await authUrl());
    expect(await refusal(callback({ state: denied.state, error: 'access_denied', error_description: 'no' }))).toEqual({
      status: 400,
      message: 'OIDC login failed: the provider answered "access_denied"',
    });
    const odd = await visit(await authUrl());
    expect(await refusal(callback({ state: odd.state, error: '<script>' }))).toEqual({ status: 400, message: 'OIDC login failed: the provider answered an unknown error' });
  });

  it('refuses when the provider refuses the client\'s secret', async () => {
    await jwt.write('config', { ...oidcConfig(), oidc_client_secret: 'not-the-secret' });
    const answer = await visit(await authUrl());
    expect(await refusal(callback(answer))).toEqual({ status: 400, message: 'OIDC login failed: the provider refused the client\'s credentials (HTTP 401)' });
  });

  it('holds the ID token to the role\'s bindings as a JWT login', async () => {
    await jwt.write('role/web', { bound_claims: { groups: 'auditors' } });
    expect(await refusal(callback(await visit(await authUrl())))).toEqual({ status: 403, message: 'permission denied: the claim "groups" does not match any of its bound values' });
    await jwt.write('role/web', { bound_claims: {}, bound_audiences: 'someone-else' });
    expect(await refusal(callback(await visit(await authUrl())))).toEqual({ status: 403, message: 'permission denied: the aud claim does not match any bound audience' });
    await jwt.write('role/web', { bound_audiences: provider.clientId, bound_subject: 'user-2' });
    expect(await refusal(callback(await visit(await authUrl())))).toEqual({ status: 403, message: 'permission denied: the sub claim does not match the bound subject' });
  });

  it('answers 502 within the deadline when the token endpoint does not answer', async () => {
    const answer = await visit(await authUrl());
    provider.stall('token');
    try {
      const refused = await timedRefusal(callback(answer));
      expect(refused).toMatchObject({ status: 502, message: `OIDC login failed: the token endpoint "${provider.url}/token" did not answer: no answer within ${TEST_DEADLINE_MS / 1000} s` });
      expect(refused.ms).toBeLessThan(TEST_DEADLINE_MS + 1_500);
    } finally {
      provider.stall('token', false);
    }
  });

  it('answers 502 within the deadline when a process that has not discovered yet cannot', async () => {
    provider.stall('discovery');
    try {
      const refused = await timedRefusal(authUrl({}, sameMount(jwt)));
      expect(refused).toMatchObject({ status: 502, message: `error checking the OIDC discovery URL "${provider.url}": no answer within ${TEST_DEADLINE_MS / 1000} s` });
      expect(refused.ms).toBeLessThan(TEST_DEADLINE_MS + 1_500);
    } finally {
      provider.stall('discovery', false);
    }
    expect(await authUrl({}, sameMount(jwt))).toBeDefined();
  });

  it('takes the provider\'s form post when oidc_response_mode is form_post, and only then', async () => {
    expect(await refusal(jwt.request('update', 'oidc/callback', { state: 'x', code: 'y' }))).toMatchObject({ status: 405 });
    await jwt.write('config', { ...oidcConfig(), oidc_response_mode: 'form_post' });
    const url = await authUrl();
    expect(url.searchParams.get('response_mode')).toBe('form_post');
    const page = await (await fetch(url)).text();
    const posted = Object.fromEntries([...page.matchAll(/name="(\w+)" value="([^"]*)"/g)].map(([, name, value]) => [name, value]));
    expect(posted).toEqual({ code: expect.any(String), state: url.searchParams.get('state') });
    expect((await jwt.request('update', 'oidc/callback', posted))?.auth).toMatchObject({ alias: { name: 'ada@example.com' } });
  });

  it('refuses a login whose time ran out, and removes such logins', async () => {
    const hasty = await mountWithRole({ oidcFlowTtlMs: 0 });
    const answer = await visit(await authUrl({}, hasty));
    await visit(await authUrl({}, hasty));
    expect(await refusal(callback(answer, hasty))).toEqual(EXPIRED_STATE);
    expect(await hasty.storage.list('oidc-state/')).toHaveLength(1);
    await hasty.periodic();
    expect(await hasty.storage.list('oidc-state/')).toEqual([]);
  });

  it('refuses OIDC logins without an OIDC client configured, or with a jwt role', async () => {
    await jwt.write('role/svc', { role_type: 'jwt', user_claim: 'sub', bound_subject: 'svc' });
    expect(await refusal(authUrl({ role: 'svc' }))).toEqual({ status: 400, message: 'role "svc" has role_type "jwt": OIDC logins need a role of role_type "oidc"' });
    await jwt.write('config', { oidc_discovery_url: provider.url });
    expect(await refusal(authUrl())).toEqual({
      status: 400,
      message: 'OIDC login is not configured for this mount: it needs oidc_discovery_url, oidc_client_id and oidc_client_secret',
    });
  });

  it('refuses a callback once the role is gone', async () => {
    const answer = await visit(await authUrl());
    await jwt.request('delete', 'role/web');
    expect(await refusal(callback(answer))).toEqual({ status: 400, message: 'OIDC login failed: role "web" could not be found' });
  });
});
