import { hashDataValues, hashStructure, hmacSha256 } from './index';
import { SECRETS, sampleResponseLine } from './testing/fixtures';

const hmac = hmacSha256(Buffer.from('test-salt-0123456789abcdef012345'));
const HASHED = /^hmac-sha256:[0-9a-f]{64}$/;

describe('hmacSha256', () => {
  it('is HMAC-SHA256 keyed by the salt, hex, with the Vault prefix', () => {
    // RFC 4231-style well-known vector: key "key", the quick brown fox.
    const known = hmacSha256(Buffer.from('key'))('The quick brown fox jumps over the lazy dog');
    expect(known).toBe('hmac-sha256:f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8');
  });

  it('differs between salts', () => {
    const other = hmacSha256(Buffer.from('another-salt'));
    expect(other('value')).not.toBe(hmac('value'));
  });

  it('refuses an empty salt', () => {
    expect(() => hmacSha256(Buffer.alloc(0))).toThrow('non-empty salt');
  });
});

describe('hashStructure', () => {
  it('hashes tokens, accessors and every data string, leaving keys and non-strings alone', () => {
    const hashed = hashStructure(sampleResponseLine(), hmac);

    expect(hashed.request.client_token).toMatch(HASHED);
    expect(hashed.auth).toMatchObject({
      client_token: hmac(SECRETS.clientToken),
      accessor: hmac(SECRETS.accessor),
      display_name: 'token-ci',
      policies: ['default', 'deploy'],
      metadata: { team: 'platform' },
    });
    expect(hashed.request).toMatchObject({
      client_token: hmac(SECRETS.clientToken),
      client_token_accessor: hmac(SECRETS.accessor),
      path: 'secret/data/app',
      headers: { 'user-agent': ['svc-cli'] },
    });
    expect(hashed.request.data).toEqual({
      password: hmac(SECRETS.password),
      port: 5432,
      enabled: true,
      nothing: null,
      nested: { api_key: hmac(SECRETS.nestedApiKey), tags: [hmac('blue'), hmac('green')] },
    });
    expect(hashed.response?.data).toEqual({ password: hmac(SECRETS.password), version: 3 });
    expect(hashed.response?.auth).toMatchObject({
      client_token: hmac(SECRETS.issuedToken),
      accessor: hmac(SECRETS.issuedAccessor),
    });
    expect(hashed.response?.wrap_info).toMatchObject({
      token: hmac(SECRETS.wrapToken),
      accessor: hmac(SECRETS.wrapAccessor),
      wrapped_accessor: hmac(SECRETS.wrappedAccessor),
      ttl: 300,
      creation_path: 'secret/data/app',
    });
    // Vault leaves lease ids in clear: they are needed to find a lease and grant nothing alone.
    expect(hashed.response?.secret).toEqual({ lease_id: 'database/creds/app/lease-77' });
    for (const secret of Object.values(SECRETS)) expect(JSON.stringify(hashed)).not.toContain(secret);
  });

  it('returns a copy and leaves its input untouched', () => {
    const line = sampleResponseLine();
    const before = structuredClone(line);

    const hashed = hashStructure(line, hmac);

    expect(line).toEqual(before);
    expect(hashed).not.toBe(line);
  });

  it('leaves empty tokens empty', () => {
    const line = sampleResponseLine({ auth: undefined });
    line.request.client_token = '';
    line.request.client_token_accessor = '';

    const hashed = hashStructure(line, hmac);

    expect(hashed.request.client_token).toBe('');
    expect(hashed.request.client_token_accessor).toBe('');
    expect(hashed.auth).toBeUndefined();
  });

  it('keeps accessors in clear when hmacAccessor is false, still hashing tokens', () => {
    const hashed = hashStructure(sampleResponseLine(), hmac, { hmacAccessor: false });

    expect(hashed.auth).toMatchObject({ client_token: hmac(SECRETS.clientToken), accessor: SECRETS.accessor });
    expect(hashed.request).toMatchObject({
      client_token: hmac(SECRETS.clientToken),
      client_token_accessor: SECRETS.accessor,
    });
    expect(hashed.response?.auth?.accessor).toBe(SECRETS.issuedAccessor);
    expect(hashed.response?.wrap_info).toMatchObject({
      token: hmac(SECRETS.wrapToken),
      accessor: SECRETS.wrapAccessor,
      wrapped_accessor: SECRETS.wrappedAccessor,
    });
  });

  it('leaves the values of non-HMAC data keys in clear, separately for request and response', () => {
    const hashed = hashStructure(sampleResponseLine(), hmac, {
      nonHmacRequestKeys: ['tags'],
      nonHmacResponseKeys: ['password'],
    });

    expect(hashed.request.data).toMatchObject({
      password: hmac(SECRETS.password),
      nested: { api_key: hmac(SECRETS.nestedApiKey), tags: ['blue', 'green'] },
    });
    expect(hashed.response?.data).toEqual({ password: SECRETS.password, version: 3 });
  });

  it('applies a non-HMAC key to the strings directly under it, not to deeper keys', () => {
    const hashed = hashDataValues({ nested: { api_key: 'k' }, note: 'n' }, hmac, ['nested', 'note']);

    expect(hashed).toEqual({ nested: { api_key: hmac('k') }, note: 'n' });
  });

  it('hashes dates and bytes as the strings they are written as', () => {
    const when = new Date('2024-05-06T07:08:09.000Z');
    const hashed = hashDataValues({ when, raw: Buffer.from('bytes') }, hmac);

    expect(hashed).toEqual({ when: hmac(when.toISOString()), raw: hmac(Buffer.from('bytes').toString('base64')) });
  });

  it('copies everything in clear with logRaw', () => {
    const line = sampleResponseLine();

    expect(hashStructure(line, hmac, { logRaw: true })).toEqual(line);
  });

  it('replaces list keys by their counts with elideListResponses, only for list operations', () => {
    const listLine = sampleResponseLine();
    listLine.request.operation = 'list';
    listLine.response!.data = { keys: ['a', 'b', 'c'], key_info: { a: {}, b: {} } };

    expect(hashStructure(listLine, hmac, { elideListResponses: true }).response?.data).toEqual({ keys: 3, key_info: 2 });
    expect(hashStructure(listLine, hmac).response?.data).toEqual({
      keys: [hmac('a'), hmac('b'), hmac('c')],
      key_info: { a: {}, b: {} },
    });
    const readLine = sampleResponseLine();
    readLine.response!.data = { keys: ['a'] };
    expect(hashStructure(readLine, hmac, { elideListResponses: true }).response?.data).toEqual({ keys: [hmac('a')] });
  });
});
