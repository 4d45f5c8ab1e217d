/**
 * The Cloud Storage emulator refuses what Cloud Storage refuses: no token, a token signed by
 * another key, one for another account, an expired one, one without a storage scope.
 */
import { createSign } from 'node:crypto';
import { startGcsEmulator, type GcsEmulator, type ServiceAccountKeyFile } from './storage';

const STORAGE_SCOPE = 'https://www.googleapis.com/auth/devstorage.read_write';

function selfSignedJwt(key: ServiceAccountKeyFile, claims: Record<string, unknown> = {}, signingKey = key.private_key): string {
  const now = Math.floor(Date.now() / 1000);
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const unsigned = `${encode({ alg: 'RS256', typ: 'JWT', kid: key.private_key_id })}.${encode({ iss: key.client_email, sub: key.client_email, scope: STORAGE_SCOPE, iat: now, exp: now + 3600, ...claims })}`;
  return `${unsigned}.${createSign('sha256').update(unsigned).sign(signingKey, 'base64url')}`;
}

describe('Cloud Storage emulator: service-account JWTs', () => {
  let gcs: GcsEmulator;
  let key: ServiceAccountKeyFile;
  let other: ServiceAccountKeyFile;
  const list = async (token?: string) => {
    const res = await fetch(`${gcs.url}/storage/v1/b/bucket/o`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    return { status: res.status, body: (await res.json()) as { error?: { message: string }; items?: unknown[] } };
  };

  beforeAll(async () => {
    gcs = await startGcsEmulator();
    gcs.buckets.set('bucket', new Map());
    key = gcs.createServiceAccount('writer');
    other = gcs.createServiceAccount('other');
  });
  afterAll(() => gcs.close());

  test('a token the account signed for itself with a storage scope is accepted', async () => {
    expect(await list(selfSignedJwt(key))).toEqual({ status: 200, body: { kind: 'storage#objects', items: [] } });
  });

  test.each<[string, () => string | undefined, number, RegExp]>([
    ['no token', () => undefined, 401, /Anonymous caller/],
    ['not a JWT', () => 'opaque-token', 401, /not a JWT/],
    ['signed with another account\'s key', () => selfSignedJwt(key, {}, other.private_key), 401, /bad signature/],
    ['issued for another account', () => selfSignedJwt(key, { iss: other.client_email, sub: other.client_email }), 401, /issuer and subject/],
    ['expired', () => selfSignedJwt(key, { exp: Math.floor(Date.now() / 1000) - 1 }), 401, /expired/],
    ['without a storage scope', () => selfSignedJwt(key, { scope: 'https://www.googleapis.com/auth/userinfo.email' }), 403, /no storage scope/],
  ])('%s is refused', async (_, token, status, message) => {
    const res = await list(token());
    expect(res.status).toBe(status);
    expect(res.body.error?.message).toMatch(message);
  });
});
