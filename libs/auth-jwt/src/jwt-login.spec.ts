import { generateKeyPairSync } from 'node:crypto';
import type { AuthResponse } from '@svc/framework';
import { refusal, type MountedBackend } from '@svc/testing';
import { startOidcProvider, type OidcProvider } from '../../../test/emulators/oidc-provider';
import { jwtMounts, sameMount, timedRefusal, TEST_DEADLINE_MS } from './testing/mount';

describe('jwt auth method: JWT logins', () => {
  let provider: OidcProvider;
  let jwt: MountedBackend;
  const mountJwt = jwtMounts();

  beforeAll(async () => {
    provider = await startOidcProvider();
  });
  afterAll(() => provider.close());

  /** A mount that finds the provider's keys by discovery, with a jwt role "svc" and `role` over its defaults. */
  async function mountWithRole(role: Record<string, unknown> = {}, config: Record<string, unknown> = { oidc_discovery_url: provider.url }): Promise<MountedBackend> {
    const mounted = await mountJwt();
    await mounted.write('config', config);
    await mounted.write('role/svc', {
      role_type: 'jwt',
      user_claim: 'email',
      bound_audiences: 'vault',
      claim_mappings: { department: 'dept', '/org/team': 'team' },
      groups_claim: 'groups',
      token_policies: 'dev',
      token_ttl: '10m',
      ...role,
    });
    return mounted;
  }

  const CLAIMS = { sub: 'svc-1', aud: 'vault', email: 'ada@example.com', department: 'eng', org: { team: 'blue' }, groups: ['admins', 'ops'] };

  /** A login with `role` (null: none named). */
  const login = async (token: string, role: string | null = 'svc', remoteAddress = '127.0.0.1'): Promise<AuthResponse> =>
    (await jwt.request('update', 'login', { jwt: token, ...(role !== null && { role }) }, { remoteAddress }))!.auth!;

  describe('with the keys of the provider\'s discovery document', () => {
    beforeEach(async () => {
      jwt = await mountWithRole();
    });

    it('logs in: the user claim names the alias, claim_mappings fill the metadata, the groups claim the group aliases', async () => {
      expect(await login(provider.mint(CLAIMS))).toMatchObject({
        policies: ['dev'],
        ttl: 600,
        renewable: true,
        displayName: 'ada@example.com',
        alias: { name: 'ada@example.com', metadata: { dept: 'eng', team: 'blue', role: 'svc' } },
        metadata: { dept: 'eng', team: 'blue', role: 'svc' },
        groupAliases: ['admins', 'ops'],
        internalData: { role: 'svc' },
      });
    });

    it('logs in with the default role when none is named, and says which role is missing', async () => {
      expect(await refusal(login(provider.mint(CLAIMS), null))).toEqual({ status: 400, message: 'missing role: name one, or set a default_role' });
      await jwt.write('config', { oidc_discovery_url: provider.url, default_role: 'svc' });
      expect(await login(provider.mint(CLAIMS), null)).toMatchObject({ alias: { name: 'ada@example.com' } });
      expect(await refusal(login(provider.mint(CLAIMS), 'nobody'))).toEqual({ status: 400, message: 'role "nobody" could not be found' });
    });

    it.each([
      ['an expired token', () => provider.mint(CLAIMS, { expired: true }), 'the token has expired'],
      ['a token for another audience', () => provider.mint({ ...CLAIMS, aud: ['other', 'api'] }), 'the aud claim does not match any bound audience'],
      ['a token without an audience', () => provider.mint({ ...CLAIMS, aud: undefined }), 'the aud claim does not match any bound audience'],
      ['a token from another issuer', () => provider.mint({ ...CLAIMS, iss: 'https://elsewhere.example' }), 'the iss claim does not match the bound issuer'],
      ['a tampered token', () => provider.mint(CLAIMS, { tampered: true }), 'the token signature does not verify'],
      ['a token signed with another key', () => provider.mint(CLAIMS, { wrongKey: true }), 'the token signature does not verify'],
      ['a token naming a key the provider does not have', () => provider.mint(CLAIMS, { kid: 'retired-key' }), 'no key of http://127.0.0.1:<port>/jwks fits the token'],
      ['a token not valid yet', () => provider.mint({ ...CLAIMS, nbf: Math.floor(Date.now() / 1000) + 3600 }), 'the token is not valid yet (nbf)'],
      ['a token without time claims', () => provider.mint({ ...CLAIMS, iat: undefined, exp: undefined }), 'the token has none of the exp, nbf and iat claims'],
    ])('refuses %s with a 403, never quoting it', async (_what, mint, reason) => {
      const token = mint();
      const refused = await refusal(login(token));
      expect(refused).toEqual({ status: 403, message: `permission denied: ${reason.replace('http://127.0.0.1:<port>', provider.url)}` });
      expect(refused.message).not.toContain(token.split('.')[1]);
    });

    it('allows the leeways past exp and before nbf', async () => {
      const seconds = Math.floor(Date.now() / 1000);
      expect(await login(provider.mint({ ...CLAIMS, iat: seconds - 600, exp: seconds - 100 }))).toBeDefined();
      expect(await login(provider.mint({ ...CLAIMS, nbf: seconds + 100 }))).toBeDefined();
      await jwt.write('role/svc', { expiration_leeway: '1s', clock_skew_leeway: '1s' });
      expect(await refusal(login(provider.mint({ ...CLAIMS, iat: seconds - 600, exp: seconds - 100 })))).toEqual({ status: 403, message: 'permission denied: the token has expired' });
    });

    it('refuses what is no JWT with a 400, and a missing jwt', async () => {
      expect(await refusal(login('not-a-jwt'))).toEqual({ status: 400, message: 'field "jwt": not a signed JWT (three base64url parts)' });
      expect(await refusal(jwt.request('update', 'login', { role: 'svc' }))).toEqual({ status: 400, message: 'missing required field "jwt"' });
    });

    it('binds the subject', async () => {
      await jwt.write('role/svc', { bound_subject: 'svc-1' });
      expect(await login(provider.mint(CLAIMS))).toBeDefined();
      expect(await refusal(login(provider.mint({ ...CLAIMS, sub: 'svc-2' })))).toEqual({ status: 403, message: 'permission denied: the sub claim does not match the bound subject' });
    });

    it('binds claims to a value, or any of a list, also in a list claim', async () => {
      await jwt.write('role/svc', { bound_claims: { department: 'eng', '/org/team': ['red', 'blue'], groups: 'ops' } });
      expect(await login(provider.mint(CLAIMS))).toBeDefined();
      expect(await refusal(login(provider.mint({ ...CLAIMS, department: 'sales' })))).toEqual({
        status: 403,
        message: 'permission denied: the claim "department" does not match any of its bound values',
      });
      expect(await refusal(login(provider.mint({ ...CLAIMS, org: { team: 'green' } })))).toMatchObject({ status: 403, message: expect.stringContaining('"/org/team"') });
      expect(await refusal(login(provider.mint({ ...CLAIMS, groups: ['admins'] })))).toMatchObject({ status: 403, message: expect.stringContaining('"groups"') });
      expect(await refusal(login(provider.mint({ ...CLAIMS, department: undefined })))).toEqual({ status: 403, message: 'permission denied: the claim "department" is missing or holds no string' });
    });

    it('binds claims to globs', async () => {
      await jwt.write('role/svc', { bound_claims_type: 'glob', bound_claims: { email: ['*@example.com', 'root@*'], '/org/team': 'bl*e' } });
      expect(await login(provider.mint(CLAIMS))).toBeDefined();
      expect(await login(provider.mint({ ...CLAIMS, email: 'root@elsewhere.org' }))).toBeDefined();
      expect(await refusal(login(provider.mint({ ...CLAIMS, email: 'ada@example.org' })))).toMatchObject({ status: 403, message: expect.stringContaining('"email"') });
    });

    it('refuses a token without the user claim or the groups claim, or with one of the wrong kind (400)', async () => {
      expect(await refusal(login(provider.mint({ ...CLAIMS, email: undefined })))).toEqual({ status: 400, message: 'claim "email" (user_claim) not found in the token' });
      expect(await refusal(login(provider.mint({ ...CLAIMS, email: { address: 'x' } })))).toEqual({ status: 400, message: 'claim "email" (user_claim) is not a non-empty string' });
      expect(await refusal(login(provider.mint({ ...CLAIMS, groups: undefined })))).toEqual({ status: 400, message: 'claim "groups" (groups_claim) not found in the token' });
      expect(await refusal(login(provider.mint({ ...CLAIMS, groups: [1, 2] })))).toEqual({ status: 400, message: 'claim "groups" (groups_claim) is not a list of strings' });
      await jwt.write('role/svc', { user_claim: '/org/id', user_claim_json_pointer: true, groups_claim: '' });
      expect(await login(provider.mint({ ...CLAIMS, org: { id: 4711 } }))).toMatchObject({ alias: { name: '4711' }, groupAliases: [] });
    });

    it('refuses a token with an audience on a role that binds none, and JWT logins on an oidc role', async () => {
      await jwt.write('role/svc', { bound_audiences: [], bound_subject: 'svc-1' });
      expect(await refusal(login(provider.mint(CLAIMS)))).toEqual({ status: 403, message: 'permission denied: the token has an aud claim but the role binds no audience' });
      expect(await login(provider.mint({ ...CLAIMS, aud: undefined }))).toBeDefined();
      await jwt.write('role/web', { user_claim: 'email', allowed_redirect_uris: 'http://localhost:8250/oidc/callback' });
      expect(await refusal(login(provider.mint(CLAIMS), 'web'))).toEqual({ status: 400, message: 'role "web" has role_type "oidc": JWT logins need a role of role_type "jwt"' });
    });

    it('refuses a login from outside the role\'s token_bound_cidrs', async () => {
      await jwt.write('role/svc', { token_bound_cidrs: '10.0.0.0/8' });
      expect(await refusal(login(provider.mint(CLAIMS), 'svc', '192.168.1.1'))).toMatchObject({ status: 403, message: expect.stringContaining('token_bound_cidrs') });
      expect(await login(provider.mint(CLAIMS), 'svc', '10.1.2.3')).toMatchObject({ boundCidrs: ['10.0.0.0/8'] });
    });

    it('holds tokens to jwt_supported_algs', async () => {
      await jwt.write('config', { oidc_discovery_url: provider.url, jwt_supported_algs: 'ES256' });
      expect(await refusal(login(provider.mint(CLAIMS)))).toEqual({ status: 403, message: 'permission denied: the token is not signed with one of the supported algorithms (jwt_supported_algs)' });
    });

    it('takes a key the provider rotated in without a restart; tokens of a dropped key stop working', async () => {
      const before = provider.mint(CLAIMS);
      expect(await login(before)).toBeDefined();
      const discoveries = provider.requests.discovery;
      provider.rotateKeys();
      expect(await login(provider.mint(CLAIMS))).toMatchObject({ alias: { name: 'ada@example.com' } });
      expect(await refusal(login(before))).toMatchObject({ status: 403, message: expect.stringMatching(/^permission denied: no key of/) });
      expect(provider.requests.discovery).toBe(discoveries);
    });

    it('discovers once per configuration in a process, and again in another process or after a change', async () => {
      await login(provider.mint(CLAIMS));
      const discoveries = provider.requests.discovery;
      await login(provider.mint(CLAIMS));
      expect(provider.requests.discovery).toBe(discoveries);
      await sameMount(jwt).request('update', 'login', { role: 'svc', jwt: provider.mint(CLAIMS) });
      expect(provider.requests.discovery).toBe(discoveries + 1);
      await jwt.write('config', { oidc_discovery_url: provider.url, bound_issuer: provider.issuer, default_role: 'svc' });
      await login(provider.mint(CLAIMS));
      expect(provider.requests.discovery).toBe(discoveries + 1);
      await jwt.write('config', { oidc_discovery_url: provider.url, oidc_client_id: 'web', oidc_client_secret: 'secret' });
      expect(provider.requests.discovery).toBe(discoveries + 2);
    });

    it('answers 502 within the deadline when the provider\'s JWKS does not answer', async () => {
      provider.rotateKeys();
      provider.stall('jwks');
      try {
        const refused = await timedRefusal(login(provider.mint(CLAIMS)));
        expect(refused).toMatchObject({ status: 502, message: `error fetching the signing keys from "${provider.url}/jwks": no answer within ${TEST_DEADLINE_MS / 1000} s` });
        expect(refused.ms).toBeLessThan(TEST_DEADLINE_MS + 1_500);
      } finally {
        provider.stall('jwks', false);
      }
      expect(await login(provider.mint(CLAIMS))).toBeDefined();
    });

    it('renews with the role\'s current policies and TTL, and refuses once the role is gone', async () => {
      const auth = await login(provider.mint(CLAIMS));
      await jwt.write('role/svc', { token_policies: 'dev,ops', token_ttl: '20m' });
      expect(await jwt.renewAuth(auth)).toMatchObject({ policies: ['dev', 'ops'], ttl: 1200, alias: { name: 'ada@example.com' } });
      await jwt.request('delete', 'role/svc');
      expect(await refusal(jwt.renewAuth(auth))).toEqual({ status: 400, message: 'role "svc" no longer exists; the token cannot be renewed' });
    });
  });

  it('verifies with jwt_validation_pubkeys, trying each key, whatever kid the token names', async () => {
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'pem', type: 'spki' }).toString();
    const foreignRsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'pem', type: 'spki' }).toString();
    jwt = await mountWithRole({}, { jwt_validation_pubkeys: [other, foreignRsa, provider.publicKeyPem()], bound_issuer: provider.issuer });
    expect(await login(provider.mint(CLAIMS))).toMatchObject({ alias: { name: 'ada@example.com' } });
    expect(await login(provider.mint(CLAIMS, { kid: 'anything' }))).toBeDefined();
    expect(await refusal(login(provider.mint({ ...CLAIMS, iss: 'https://elsewhere.example' })))).toMatchObject({ status: 403 });
    provider.rotateKeys();
    expect(await refusal(login(provider.mint(CLAIMS)))).toEqual({ status: 403, message: 'permission denied: the token signature does not verify' });
  });

  it('verifies with the keys of a JWKS URL, taking no issuer unless one is bound', async () => {
    jwt = await mountWithRole({}, { jwks_url: `${provider.url}/jwks` });
    expect(await login(provider.mint({ ...CLAIMS, iss: 'https://anyone.example' }))).toBeDefined();
    await jwt.write('config', { jwks_url: `${provider.url}/jwks`, bound_issuer: provider.issuer });
    expect(await refusal(login(provider.mint({ ...CLAIMS, iss: 'https://anyone.example' })))).toEqual({ status: 403, message: 'permission denied: the iss claim does not match the bound issuer' });
    expect(await login(provider.mint(CLAIMS))).toBeDefined();
  });
});
