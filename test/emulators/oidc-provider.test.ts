/**
 * The OIDC provider emulator, driven over plain HTTP as a client would: discovery, the JWKS and
 * its rotation, the authorization code flow with PKCE, and the refusals a real provider makes
 * (a redeemed code, a wrong secret, a wrong verifier, a missing challenge).
 */
import { createHash, createPublicKey, randomBytes, type JsonWebKey } from 'node:crypto';
import { decodeJwt, verifyJwt } from './jwt';
import { startOidcProvider, type OidcProvider } from './oidc-provider';

const REDIRECT_URI = 'http://127.0.0.1:8250/oidc/callback';

interface Jwks {
  keys: (JsonWebKey & { kid: string })[];
}

describe('OIDC provider emulator', () => {
  let provider: OidcProvider;

  beforeEach(async () => {
    provider = await startOidcProvider({ redirectUris: [REDIRECT_URI] });
  });
  afterEach(() => provider.close());

  const getJson = async <T>(path: string): Promise<T> => (await (await fetch(`${provider.url}${path}`)).json()) as T;
  const jwks = () => getJson<Jwks>('/jwks');

  /** The claims of `token` when it verifies with the JWKS key its kid names; otherwise what is wrong. */
  async function verifiedWithJwks(token: string): Promise<Record<string, unknown> | string> {
    const kid = decodeJwt(token)?.header.kid;
    const jwk = (await jwks()).keys.find((key) => key.kid === kid);
    if (!jwk) return 'no key of that kid';
    const result = verifyJwt(token, createPublicKey({ key: jwk, format: 'jwk' }));
    return 'claims' in result ? result.claims : result.problem;
  }

  function pkce(): { verifier: string; challenge: string } {
    const verifier = randomBytes(32).toString('base64url');
    return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
  }

  /** Follows the authorization endpoint's redirect: the code (or error) it sends back, and the state. */
  async function authorize(overrides: Record<string, string> = {}): Promise<{ status: number; params: URLSearchParams }> {
    const query = new URLSearchParams({
      client_id: provider.clientId,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope: 'openid email',
      state: 'state-1',
      nonce: 'nonce-1',
      code_challenge_method: 'S256',
      ...overrides,
    });
    const res = await fetch(`${provider.url}/authorize?${query}`, { redirect: 'manual' });
    const location = res.headers.get('location');
    return { status: res.status, params: location ? new URL(location).searchParams : new URLSearchParams() };
  }

  async function redeem(form: Record<string, string>, basic?: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (basic) headers.authorization = `Basic ${Buffer.from(basic).toString('base64')}`;
    const res = await fetch(`${provider.url}/token`, { method: 'POST', headers, body: new URLSearchParams({ grant_type: 'authorization_code', redirect_uri: REDIRECT_URI, ...form }) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  test('discovery names the issuer and its endpoints; the JWKS holds the signing key under a kid', async () => {
    expect(await getJson('/.well-known/openid-configuration')).toMatchObject({
      issuer: provider.issuer,
      authorization_endpoint: `${provider.url}/authorize`,
      token_endpoint: `${provider.url}/token`,
      jwks_uri: `${provider.url}/jwks`,
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    });
    const { keys } = await jwks();
    expect(keys).toEqual([expect.objectContaining({ kty: 'RSA', kid: expect.any(String), use: 'sig', alg: 'RS256' })]);
    expect(createPublicKey({ key: keys[0], format: 'jwk' }).export({ format: 'pem', type: 'spki' })).toBe(provider.publicKeyPem());
  });

  test('the code flow with PKCE: a redirect with code and state, then an ID token for the signed-in user', async () => {
    provider.signInAs({ sub: 'user-1', email: 'ada@example.com', groups: ['admins'] });
    const { verifier, challenge } = pkce();
    const answer = await authorize({ code_challenge: challenge });
    expect(answer.status).toBe(302);
    expect(answer.params.get('state')).toBe('state-1');
    const tokens = await redeem({ code: answer.params.get('code')!, code_verifier: verifier }, `${provider.clientId}:${provider.clientSecret}`);
    expect(tokens).toMatchObject({ status: 200, body: { token_type: 'Bearer', access_token: expect.any(String) } });
    expect(await verifiedWithJwks(String(tokens.body.id_token))).toMatchObject({
      iss: provider.issuer,
      aud: provider.clientId,
      sub: 'user-1',
      nonce: 'nonce-1',
      email: 'ada@example.com',
      groups: ['admins'],
      exp: expect.any(Number),
      iat: expect.any(Number),
    });
  });

  test('client_secret_post authenticates too; a code is redeemed once', async () => {
    provider.signInAs({ sub: 'user-2' });
    const { verifier, challenge } = pkce();
    const code = (await authorize({ code_challenge: challenge })).params.get('code')!;
    const form = { code, code_verifier: verifier, client_id: provider.clientId, client_secret: provider.clientSecret };
    expect((await redeem(form)).status).toBe(200);
    expect(await redeem(form)).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'the code was already redeemed' } });
  });

  test('a wrong secret is invalid_client; a wrong verifier or redirect URI is invalid_grant', async () => {
    provider.signInAs({ sub: 'user-3' });
    const { verifier, challenge } = pkce();
    const code = (await authorize({ code_challenge: challenge })).params.get('code')!;
    expect(await redeem({ code, code_verifier: verifier }, `${provider.clientId}:wrong`)).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect(await redeem({ code, code_verifier: verifier })).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect(await redeem({ code, code_verifier: pkce().verifier }, `${provider.clientId}:${provider.clientSecret}`)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const again = pkce();
    const other = (await authorize({ code_challenge: again.challenge })).params.get('code')!;
    expect(await redeem({ code: other, code_verifier: again.verifier, redirect_uri: 'http://127.0.0.1:8250/elsewhere' }, `${provider.clientId}:${provider.clientSecret}`)).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });
  });

  test('the authorization endpoint refuses a request without an S256 challenge, an unknown client or redirect URI', async () => {
    provider.signInAs({ sub: 'user-4' });
    expect((await authorize()).params.get('error')).toBe('invalid_request');
    expect((await authorize({ code_challenge: 'x', code_challenge_method: 'plain' })).params.get('error')).toBe('invalid_request');
    expect((await authorize({ code_challenge: 'x', client_id: 'someone-else' })).status).toBe(400);
    expect((await authorize({ code_challenge: 'x', redirect_uri: 'http://127.0.0.1:1/elsewhere' })).status).toBe(400);
  });

  test('rotation: the new key signs under a new kid; the old one leaves the JWKS, or stays when kept', async () => {
    const before = provider.mint({ sub: 'svc' });
    const [{ kid: firstKid }] = (await jwks()).keys;
    provider.rotateKeys();
    const after = provider.mint({ sub: 'svc' });
    expect(decodeJwt(after)?.header.kid).not.toBe(firstKid);
    expect(await verifiedWithJwks(after)).toMatchObject({ sub: 'svc', iss: provider.issuer });
    expect(await verifiedWithJwks(before)).toBe('no key of that kid');
    provider.rotateKeys({ keepOld: true });
    expect((await jwks()).keys).toHaveLength(2);
    expect(await verifiedWithJwks(after)).toMatchObject({ sub: 'svc' });
  });

  test('minted tokens can be expired, signed with a wrong key, tampered with or carry another kid', async () => {
    expect(await verifiedWithJwks(provider.mint({ sub: 'a' }, { expired: true }))).toBe('token expired');
    expect(await verifiedWithJwks(provider.mint({ sub: 'a' }, { wrongKey: true }))).toBe('signature does not verify');
    expect(await verifiedWithJwks(provider.mint({ sub: 'a' }, { tampered: true }))).toBe('signature does not verify');
    expect(await verifiedWithJwks(provider.mint({ sub: 'a' }, { kid: 'unknown' }))).toBe('no key of that kid');
  });

  test('a stalled endpoint takes the request and never answers', async () => {
    provider.stall('discovery');
    const outcome = await fetch(`${provider.url}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(300) }).then(
      () => 'answered',
      (err: Error) => err.name,
    );
    expect(outcome).toBe('TimeoutError');
    expect(provider.requests.discovery).toBe(1);
    provider.stall('discovery', false);
    expect((await fetch(`${provider.url}/.well-known/openid-configuration`)).status).toBe(200);
  });
});
