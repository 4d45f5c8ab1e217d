import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildOpenApi } from '@svc/framework';
import { closedPort, createTestCa, refusal, validateOpenApi, type MountedBackend } from '@svc/testing';
import { startOidcProvider, type OidcProvider } from '../../../test/emulators/oidc-provider';
import { jwtMounts, timedRefusal, TEST_DEADLINE_MS } from './testing/mount';

describe('jwt auth method: config and roles', () => {
  let provider: OidcProvider;
  let jwt: MountedBackend;
  const mountJwt = jwtMounts();

  beforeAll(async () => {
    provider = await startOidcProvider();
  });
  afterAll(() => provider.close());
  beforeEach(async () => {
    jwt = await mountJwt();
  });

  const discoveryConfig = () => ({ oidc_discovery_url: provider.url, oidc_client_id: provider.clientId, oidc_client_secret: provider.clientSecret });

  describe('config', () => {
    it('writes a discovery config and reads it back with its defaults, never the client secret', async () => {
      await jwt.write('config', { ...discoveryConfig(), default_role: 'Dev', provider_config: { provider: 'custom', fetch_groups: true } });
      const read = await jwt.read('config');
      expect(read).toEqual({
        oidc_discovery_url: provider.url,
        oidc_discovery_ca_pem: '',
        oidc_client_id: provider.clientId,
        oidc_response_mode: 'query',
        oidc_response_types: ['code'],
        jwks_url: '',
        jwks_ca_pem: '',
        jwt_validation_pubkeys: [],
        jwt_supported_algs: [],
        bound_issuer: '',
        default_role: 'dev',
        provider_config: { provider: 'custom', fetch_groups: true },
        namespace_in_state: true,
      });
      expect(JSON.stringify(read)).not.toContain(provider.clientSecret);
    });

    it('takes public keys or a JWKS URL as the key source instead', async () => {
      await jwt.write('config', { jwt_validation_pubkeys: [provider.publicKeyPem()], jwt_supported_algs: 'RS256,ES256', bound_issuer: provider.issuer });
      expect(await jwt.read('config')).toMatchObject({ jwt_validation_pubkeys: [provider.publicKeyPem().trim()], jwt_supported_algs: ['RS256', 'ES256'], oidc_discovery_url: '' });
      await jwt.write('config', { jwks_url: `${provider.url}/jwks`, namespace_in_state: false });
      expect(await jwt.read('config')).toMatchObject({ jwks_url: `${provider.url}/jwks`, jwt_validation_pubkeys: [], namespace_in_state: false });
      await jwt.write('config', { jwks_url: `${provider.url}/jwks` });
      expect(await jwt.read('config')).toMatchObject({ namespace_in_state: false });
    });

    const badConfigs: [string, (p: OidcProvider) => Record<string, unknown>, RegExp][] = [
      ['no key source', () => ({ bound_issuer: 'x' }), /exactly one of "oidc_discovery_url", "jwks_url" and "jwt_validation_pubkeys" must be set \(none is\)/],
      ['two key sources', (p) => ({ jwks_url: `${p.url}/jwks`, jwt_validation_pubkeys: [p.publicKeyPem()] }), /exactly one of .* \(got jwks_url, jwt_validation_pubkeys\)/],
      ['a discovery URL that is no http URL', () => ({ oidc_discovery_url: 'ftp://idp.example' }), /field "oidc_discovery_url": "ftp:\/\/idp.example" is not an http\(s\) URL/],
      ['a discovery URL with .well-known', (p) => ({ oidc_discovery_url: `${p.url}/.well-known/openid-configuration` }), /field "oidc_discovery_url": must be the issuer's base URL/],
      ['a JWKS URL that is no URL', () => ({ jwks_url: 'keys' }), /field "jwks_url": "keys" is not a URL/],
      ['a public key that is none', () => ({ jwt_validation_pubkeys: ['-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----'] }), /field "jwt_validation_pubkeys": entry 1 is not a PEM public key/],
      ['a CA that is no certificate', (p) => ({ oidc_discovery_url: p.url, oidc_discovery_ca_pem: 'trust me' }), /field "oidc_discovery_ca_pem": holds no PEM certificate/],
      ['a client ID without its secret', (p) => ({ oidc_discovery_url: p.url, oidc_client_id: 'web' }), /both "oidc_client_id" and "oidc_client_secret" must be set/],
      ['a client without discovery', (p) => ({ jwt_validation_pubkeys: [p.publicKeyPem()], oidc_client_id: 'web', oidc_client_secret: 's' }), /field "oidc_client_id": OIDC needs "oidc_discovery_url"/],
      ['an unknown response mode', (p) => ({ oidc_discovery_url: p.url, oidc_response_mode: 'fragment' }), /field "oidc_response_mode": "fragment" is not one of: query, form_post/],
      ['the implicit flow', (p) => ({ oidc_discovery_url: p.url, oidc_response_types: 'id_token' }), /field "oidc_response_types": .* is not one of: code/],
      ['a shared-secret algorithm', (p) => ({ jwt_validation_pubkeys: [p.publicKeyPem()], jwt_supported_algs: 'HS256' }), /field "jwt_supported_algs": .* is not one of: RS256/],
      ['a provider_config that is no map', (p) => ({ jwt_validation_pubkeys: [p.publicKeyPem()], provider_config: 'azure' }), /field "provider_config": "azure" is not a map/],
    ];

    it.each(badConfigs)('refuses %s with a 400 naming the field, and keeps the config it had', async (_what, body, problem) => {
      await jwt.write('config', { jwks_url: `${provider.url}/jwks` });
      expect(await refusal(jwt.write('config', body(provider)))).toEqual({ status: 400, message: expect.stringMatching(problem) });
      expect(await jwt.read('config')).toMatchObject({ jwks_url: `${provider.url}/jwks` });
    });

    it('refuses a discovery URL nothing answers at, naming the URL and the failure', async () => {
      const url = `http://127.0.0.1:${await closedPort()}`;
      expect(await refusal(jwt.write('config', { oidc_discovery_url: url }))).toEqual({
        status: 400,
        message: expect.stringMatching(new RegExp(`^field "oidc_discovery_url": error checking the OIDC discovery URL "${url}": .*ECONNREFUSED`)),
      });
      expect(await jwt.read('config')).toBeUndefined();
    });

    it('refuses a discovery URL that does not answer in time, within the deadline', async () => {
      provider.stall('discovery');
      try {
        const refused = await timedRefusal(jwt.write('config', discoveryConfig()));
        expect(refused).toMatchObject({ status: 400, message: `field "oidc_discovery_url": error checking the OIDC discovery URL "${provider.url}": no answer within ${TEST_DEADLINE_MS / 1000} s` });
        expect(refused.ms).toBeLessThan(TEST_DEADLINE_MS + 1_500);
      } finally {
        provider.stall('discovery', false);
      }
    });

    it('refuses a JWKS URL that does not answer, or answers no key set', async () => {
      provider.stall('jwks');
      try {
        expect(await timedRefusal(jwt.write('config', { jwks_url: `${provider.url}/jwks` }))).toMatchObject({ status: 400, message: expect.stringMatching(/^field "jwks_url": error fetching the JWKS .*no answer within/) });
      } finally {
        provider.stall('jwks', false);
      }
      expect(await refusal(jwt.write('config', { jwks_url: `${provider.url}/.well-known/openid-configuration` }))).toEqual({ status: 400, message: expect.stringMatching(/^field "jwks_url": error fetching the JWKS/) });
    });

    it('discovers over HTTPS when the provider\'s CA is given, and refuses a certificate it cannot verify', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'jwt-ca-'));
      const ca = createTestCa(dir, 'OIDC test CA');
      const secure = await startOidcProvider({ tls: ca.issue('idp', ['127.0.0.1']) });
      try {
        expect(await refusal(jwt.write('config', { oidc_discovery_url: secure.url }))).toEqual({ status: 400, message: expect.stringMatching(/^field "oidc_discovery_url": .*unable to verify the first certificate \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)$/) });
        await jwt.write('config', { oidc_discovery_url: secure.url, oidc_discovery_ca_pem: readFileSync(ca.caCert, 'utf8') });
        expect(await jwt.read('config')).toMatchObject({ oidc_discovery_url: secure.url });
      } finally {
        await secure.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('roles', () => {
    it('creates, reads, lists, updates and deletes roles', async () => {
      await jwt.write('role/Svc', { role_type: 'jwt', user_claim: 'sub', bound_audiences: 'vault,api', bound_claims: { team: ['blue', 'red'] }, token_policies: 'Dev', token_ttl: '1h' });
      expect(await jwt.read('role/svc')).toEqual({
        role_type: 'jwt',
        bound_audiences: ['vault', 'api'],
        user_claim: 'sub',
        user_claim_json_pointer: false,
        bound_subject: '',
        bound_claims: { team: ['blue', 'red'] },
        bound_claims_type: 'string',
        claim_mappings: {},
        groups_claim: '',
        oidc_scopes: [],
        allowed_redirect_uris: [],
        verbose_oidc_logging: false,
        clock_skew_leeway: 60,
        expiration_leeway: 150,
        not_before_leeway: 150,
        max_age: 0,
        token_policies: ['dev'],
        policies: ['dev'],
        token_ttl: 3600,
        token_max_ttl: 0,
        token_explicit_max_ttl: 0,
        token_period: 0,
        period: 0,
        token_num_uses: 0,
        token_no_default_policy: false,
        token_bound_cidrs: [],
        token_type: 'default',
      });
      await jwt.write('role/web', { user_claim: 'email', allowed_redirect_uris: 'http://localhost:8250/oidc/callback', oidc_scopes: 'email', claim_mappings: { name: 'full_name' } });
      expect(await jwt.list('role/')).toEqual(['svc', 'web']);
      await jwt.write('role/svc', { bound_subject: 'svc-1', clock_skew_leeway: '2m' });
      expect(await jwt.read('role/svc')).toMatchObject({ role_type: 'jwt', bound_subject: 'svc-1', bound_audiences: ['vault', 'api'], clock_skew_leeway: 120, token_ttl: 3600 });
      await jwt.request('delete', 'role/svc');
      expect(await jwt.read('role/svc')).toBeUndefined();
      expect(await jwt.list('role/')).toEqual(['web']);
    });

    it('warns when a role logs the claims of its OIDC logins', async () => {
      const answer = await jwt.request('update', 'role/debug', { user_claim: 'sub', allowed_redirect_uris: 'https://vault.example/callback', verbose_oidc_logging: true });
      expect(answer?.warnings).toEqual([expect.stringMatching(/verbose_oidc_logging is on/)]);
    });

    it.each([
      [{ role_type: 'jwt', bound_subject: 'x' }, /missing required field "user_claim"/],
      [{ user_claim: 'sub' }, /field "allowed_redirect_uris": required for role_type "oidc"/],
      [{ user_claim: 'sub', allowed_redirect_uris: 'callback' }, /field "allowed_redirect_uris": "callback" is not a URL/],
      [{ role_type: 'jwt', user_claim: 'sub' }, /a jwt role must bind something/],
      [{ role_type: 'service', user_claim: 'sub' }, /field "role_type": "service" is not one of: oidc, jwt/],
      [{ role_type: 'jwt', user_claim: 'sub', bound_claims_type: 'regex', bound_subject: 'x' }, /field "bound_claims_type"/],
      [{ role_type: 'jwt', user_claim: 'sub', bound_claims: { team: 7 } }, /field "bound_claims": the value of "team" must be a string or a non-empty list of strings/],
      [{ role_type: 'jwt', user_claim: 'sub', bound_claims: { team: [] } }, /field "bound_claims": the value of "team"/],
      [{ role_type: 'jwt', user_claim: 'sub', bound_claims: 'team=blue' }, /field "bound_claims": .* is not a map/],
      [{ role_type: 'jwt', user_claim: 'sub', bound_subject: 'x', claim_mappings: { team: 'role' } }, /field "claim_mappings": the metadata key "role" is reserved/],
      [{ role_type: 'jwt', user_claim: 'sub', bound_subject: 'x', claim_mappings: { team: 'group', squad: 'group' } }, /several claims map to the metadata key "group"/],
      [{ role_type: 'jwt', user_claim: 'email', user_claim_json_pointer: true, bound_subject: 'x' }, /field "user_claim": a JSON pointer starts with "\/"/],
      [{ role_type: 'jwt', user_claim: 'sub', bound_subject: 'x', clock_skew_leeway: -1 }, /field "clock_skew_leeway": .* is not a valid duration/],
      [{ role_type: 'jwt', user_claim: 'sub', bound_subject: 'x', token_ttl: '2h', token_max_ttl: '1h' }, /token_ttl/],
    ])('refuses a bad role %j with a 400 naming the problem, writing nothing', async (body, problem) => {
      expect(await refusal(jwt.write('role/bad', body))).toEqual({ status: 400, message: expect.stringMatching(problem) });
      expect(await jwt.read('role/bad')).toBeUndefined();
    });
  });

  it('describes every path in help and a valid OpenAPI document', async () => {
    const document = buildOpenApi([{ prefix: '/auth/jwt/', backend: jwt.backend }], { title: 'jwt', version: '1' });
    expect(await validateOpenApi(document)).toEqual({ valid: true });
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/auth/jwt/config', '/auth/jwt/role/', '/auth/jwt/role/{name}', '/auth/jwt/login', '/auth/jwt/oidc/auth_url', '/auth/jwt/oidc/callback']),
    );
    expect(jwt.backend.help('').help).toMatch(/jwt\/oidc auth method/);
    expect((await mountJwt({}, 'oidc')).backend.type).toBe('oidc');
  });
});
