/**
 * The transit engine through the gateway, in both topologies (distributed: transit is its own
 * process on NATS), and what a user sees when the service is gone or runs as several replicas.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  constants,
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  createPublicKey,
  generateKeyPairSync,
  publicEncrypt,
  randomBytes,
  verify as cryptoVerify,
} from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { api, eventually, initAndUnseal, startTopology, type Topology, type TopologyKind } from '@svc/testing';

/** Response data as the tests read it; each test asserts the shape it relies on. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Data = Record<string, any>;
interface Reply {
  data: Data;
  errors: string[];
  warnings?: string[];
  auth: { client_token: string };
  wrap_info: { token: string };
}

const b64 = (value: string | Buffer) => Buffer.from(value).toString('base64');
const unb64 = (value: string) => Buffer.from(value, 'base64').toString('utf8');

/** A value no error may ever contain: it stands for the caller's secret data. */
const SECRET = 'correct horse battery staple';

/** AES-256-GCM as any client would decrypt a transit ciphertext with the exported key. */
function openLocally(key: Buffer, ciphertext: string): string {
  const blob = Buffer.from(ciphertext.split(':')[2], 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, blob.subarray(0, 12));
  decipher.setAuthTag(blob.subarray(blob.length - 16));
  return Buffer.concat([decipher.update(blob.subarray(12, blob.length - 16)), decipher.final()]).toString();
}

/** The import format, built with Node's crypto: RSA-OAEP(SHA-256) of an AES key, then AES key wrap with padding. */
function wrapForImport(wrappingKeyPem: string, material: Buffer): string {
  const ephemeral = randomBytes(32);
  const wrappedKey = publicEncrypt({ key: wrappingKeyPem, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, ephemeral);
  const wrap = createCipheriv('id-aes256-wrap-pad', ephemeral, Buffer.from('a65959a6', 'hex'));
  return Buffer.concat([wrappedKey, wrap.update(material), wrap.final()]).toString('base64');
}

/**
 * Waits until every transit replica answers: services receive the keyring from the gateway after
 * unseal and answer 503 until then. 20 requests in a row reach each of two replicas (else 2^-19).
 */
async function transitReady(url: string, token: string): Promise<void> {
  const probe = () => api(url, 'POST', '/v1/transit/random/1', { token });
  await eventually(async () => (await Promise.all(Array.from({ length: 20 }, probe))).every((res) => res.status === 200), 30_000);
}

/** Runs the `openssl` binary on a PEM file; returns its exit status and its output (stdout and stderr). */
function openssl(args: string[], pem: string): { status: number | null; output: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-transit-'));
  try {
    writeFileSync(path.join(dir, 'in.pem'), pem);
    const run = spawnSync('openssl', [...args, '-in', path.join(dir, 'in.pem')], { encoding: 'utf8' });
    return { status: run.status, output: run.stdout + run.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('transit, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let token: string;

  const call = (method: string, where: string, body?: unknown, as = token) => api<Reply>(url, method, `/v1/${where}`, { token: as, body });
  /** A request that must succeed (200, or 204 without a body); returns `data`. */
  const ok = async (method: string, where: string, body?: unknown, as = token): Promise<Data> => {
    const res = await call(method, where, body, as);
    expect([res.status, where, res.text]).toEqual([res.status === 204 ? 204 : 200, where, expect.any(String)]);
    return res.body?.data ?? {};
  };
  /** A request that must fail with a 4xx naming the problem and never echoing the secret. */
  const refused = async (method: string, where: string, body: unknown, problem: RegExp, as = token): Promise<number> => {
    const res = await call(method, where, body, as);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.body.errors.join('; ')).toMatch(problem);
    expect(res.text).not.toContain(SECRET);
    expect(res.text).not.toContain(b64(SECRET));
    return res.status;
  };
  const mount = (where: string) => ok('POST', `sys/mounts/${where}`, { type: 'transit' });

  beforeAll(async () => {
    topology = await startTopology(kind, { services: ['transit'] });
    url = topology.urls[0];
    ({ rootToken: token } = await initAndUnseal(url));
    for (const where of ['transit', 'transit-b', 'transit-upsert']) await mount(where);
    await transitReady(url, token);
  }, 120_000);

  afterAll(() => topology?.stop());

  test('encrypt and decrypt round trip; the ciphertext opens with standard AES-GCM and the exported key', async () => {
    expect((await api(url, 'POST', '/v1/transit/keys/app', { token, body: { exportable: true } })).status).toBe(200);
    const plaintext = Buffer.from('attack at dawn').toString('base64');
    const enc = await api<{ data: { ciphertext: string } }>(url, 'POST', '/v1/transit/encrypt/app', { token, body: { plaintext } });
    expect(enc.status).toBe(200);
    expect(enc.body.data.ciphertext).toMatch(/^svc:v1:/);
    const dec = await api<{ data: { plaintext: string } }>(url, 'POST', '/v1/transit/decrypt/app', { token, body: { ciphertext: enc.body.data.ciphertext } });
    expect(dec.body.data.plaintext).toBe(plaintext);

    const exported = await api<{ data: { keys: Record<string, string> } }>(url, 'GET', '/v1/transit/export/encryption-key/app/1', { token });
    expect(openLocally(Buffer.from(exported.body.data.keys['1'], 'base64'), enc.body.data.ciphertext)).toBe('attack at dawn');
  });

  test('bad input is a 4xx naming the problem, without echoing the plaintext', async () => {
    const bad = await api(url, 'POST', '/v1/transit/encrypt/app', { token, body: { plaintext: 'not base64 at all!' } });
    expect(bad.status).toBe(400);
    expect(bad.text).not.toContain('not base64 at all!');
    const tampered = await api(url, 'POST', '/v1/transit/decrypt/app', { token, body: { ciphertext: 'svc:v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } });
    expect(tampered.status).toBe(400);
  });

  test('creates every key type; asymmetric keys show their public keys, which match the exported ones', async () => {
    const symmetric = ['aes128-gcm96', 'aes256-gcm96', 'chacha20-poly1305', 'hmac'];
    const asymmetric: [string, string, RegExp][] = [
      ['ed25519', 'ed25519', /^[A-Za-z0-9+/]{43}=$/],
      ['ecdsa-p256', 'P-256', /^-----BEGIN PUBLIC KEY-----/],
      ['ecdsa-p384', 'P-384', /^-----BEGIN PUBLIC KEY-----/],
      ['ecdsa-p521', 'P-521', /^-----BEGIN PUBLIC KEY-----/],
      ['rsa-2048', 'rsa', /^-----BEGIN PUBLIC KEY-----/],
      ['rsa-3072', 'rsa', /^-----BEGIN PUBLIC KEY-----/],
      ['rsa-4096', 'rsa', /^-----BEGIN PUBLIC KEY-----/],
    ];
    for (const type of symmetric) {
      const created = await ok('POST', `transit/keys/type-${type}`, { type });
      expect(created).toMatchObject({ type, latest_version: 1, keys: { '1': expect.any(Number) } });
      expect(await ok('GET', `transit/keys/type-${type}`)).toEqual(created);
    }
    for (const [type, name, publicKey] of asymmetric) {
      await ok('POST', `transit/keys/type-${type}`, { type });
      const read = await ok('GET', `transit/keys/type-${type}`);
      expect(read).toMatchObject({ type, supports_signing: true, keys: { '1': { name, public_key: expect.stringMatching(publicKey) } } });
      const exported = await ok('GET', `transit/export/public-key/type-${type}/latest`);
      expect(exported.keys['1']).toBe(read.keys['1'].public_key);
    }
    await refused('POST', 'transit/keys/type-bad', { type: 'des' }, /type/);
    await refused('POST', 'transit/keys/type-bad', { type: 'managed_key' }, /enterprise/);
    await refused('GET', 'transit/export/encryption-key/type-aes256-gcm96', undefined, /not exportable/);
    // Document 2 lists keys with `LIST /transit/keys`, without a trailing slash.
    const listed = await call('LIST', 'transit/keys');
    expect([listed.status, listed.body.data?.keys]).toEqual([200, expect.arrayContaining([...symmetric, ...asymmetric.map(([type]) => type)].map((type) => `type-${type}`))]);
  });

  test('config rules: min_decryption_version refuses old ciphertext, versions stay within bounds, deletion needs permission', async () => {
    await ok('POST', 'transit/keys/cfg');
    const old = (await ok('POST', 'transit/encrypt/cfg', { plaintext: b64(SECRET) })).ciphertext;
    await ok('POST', 'transit/keys/cfg/rotate');
    await ok('POST', 'transit/keys/cfg/rotate');
    expect(unb64((await ok('POST', 'transit/decrypt/cfg', { ciphertext: old })).plaintext)).toBe(SECRET);

    const tuned = await ok('POST', 'transit/keys/cfg/config', { min_decryption_version: 2 });
    expect(tuned).toMatchObject({ min_decryption_version: 2, latest_version: 3 });
    await refused('POST', 'transit/decrypt/cfg', { ciphertext: old }, /min_decryption_version/);
    await refused('POST', 'transit/keys/cfg/config', { min_decryption_version: 4 }, /latest key version is 3/);
    await refused('POST', 'transit/keys/cfg/config', { min_encryption_version: 1 }, /at least min_decryption_version/);
    await ok('POST', 'transit/keys/cfg/config', { min_encryption_version: 3 });
    await refused('POST', 'transit/encrypt/cfg', { plaintext: b64(SECRET), key_version: 2 }, /minimum encryption version/);
    await refused('POST', 'transit/keys/cfg/config', { auto_rotate_period: '10m' }, /one hour/);

    await refused('DELETE', 'transit/keys/cfg', undefined, /deletion is not allowed/);
    await ok('POST', 'transit/keys/cfg/config', { deletion_allowed: true });
    await ok('DELETE', 'transit/keys/cfg');
    expect((await call('GET', 'transit/keys/cfg')).status).toBe(404);
  });

  test('rotate then rewrap upgrades old ciphertext to the latest version without revealing plaintext', async () => {
    await ok('POST', 'transit/keys/rot');
    const v1 = (await ok('POST', 'transit/encrypt/rot', { plaintext: b64(SECRET), })).ciphertext;
    const rotated = await ok('POST', 'transit/keys/rot/rotate');
    expect(rotated.latest_version).toBe(2);
    expect((await ok('POST', 'transit/encrypt/rot', { plaintext: b64(SECRET) })).ciphertext).toMatch(/^svc:v2:/);
    const rewrapped = await ok('POST', 'transit/rewrap/rot', { ciphertext: v1 });
    expect(rewrapped).toEqual({ ciphertext: expect.stringMatching(/^svc:v2:/), key_version: 2 });
    expect(JSON.stringify(rewrapped)).not.toContain(b64(SECRET));
    expect(unb64((await ok('POST', 'transit/decrypt/rot', { ciphertext: rewrapped.ciphertext })).plaintext)).toBe(SECRET);
  });

  test('convergent encryption: the same plaintext and context give the same ciphertext; derived keys need a context', async () => {
    await ok('POST', 'transit/keys/conv', { derived: true, convergent_encryption: true });
    const encrypt = async (context: string) => (await ok('POST', 'transit/encrypt/conv', { plaintext: b64(SECRET), context: b64(context) })).ciphertext;
    const first = await encrypt('tenant-1');
    expect(await encrypt('tenant-1')).toBe(first);
    expect(await encrypt('tenant-2')).not.toBe(first);
    expect(unb64((await ok('POST', 'transit/decrypt/conv', { ciphertext: first, context: b64('tenant-1') })).plaintext)).toBe(SECRET);
    await refused('POST', 'transit/decrypt/conv', { ciphertext: first, context: b64('tenant-2') }, /authentication failed/);
    await refused('POST', 'transit/encrypt/conv', { plaintext: b64(SECRET) }, /context/);
    await refused('POST', 'transit/keys/conv-bad', { convergent_encryption: true }, /derivation/);

    // A plain derived key is not convergent: each encryption gets a fresh nonce.
    await ok('POST', 'transit/keys/derived', { derived: true });
    const derived = () => ok('POST', 'transit/encrypt/derived', { plaintext: b64(SECRET), context: b64('tenant-1') });
    expect((await derived()).ciphertext).not.toBe((await derived()).ciphertext);
  });

  test('batch: results keep input order and references; partial failure gives 400 or partial_failure_response_code', async () => {
    await ok('POST', 'transit/keys/batch');
    const encrypted = await call('POST', 'transit/encrypt/batch', {
      batch_input: [
        { plaintext: b64('one'), reference: 'first' },
        { plaintext: `${SECRET}!`, reference: 'broken' },
        { plaintext: b64('three'), reference: 'third' },
      ],
    });
    expect(encrypted.status).toBe(400);
    const results = encrypted.body.data.batch_results;
    expect(results.map((r: Data) => r.reference)).toEqual(['first', 'broken', 'third']);
    expect(results[1].error).toMatch(/plaintext is not valid base64/);
    expect(encrypted.text).not.toContain(SECRET);

    const partial = await call('POST', 'transit/encrypt/batch', {
      batch_input: [{ plaintext: b64('one'), reference: 'a' }, { reference: 'b' }],
      partial_failure_response_code: 207,
    });
    expect(partial.status).toBe(207);
    expect(partial.body.data.batch_results).toEqual([
      { ciphertext: expect.stringMatching(/^svc:v1:/), key_version: 1, reference: 'a' },
      { error: expect.stringMatching(/missing plaintext/), reference: 'b' },
    ]);

    const decrypted = await call('POST', 'transit/decrypt/batch', {
      batch_input: [
        { ciphertext: results[2].ciphertext, reference: 'x' },
        { ciphertext: results[0].ciphertext, reference: 'y' },
      ],
    });
    expect(decrypted.status).toBe(200);
    expect(decrypted.body.data.batch_results.map((r: Data) => [r.reference, unb64(r.plaintext)])).toEqual([
      ['x', 'three'],
      ['y', 'one'],
    ]);
    const allFailed = await call('POST', 'transit/decrypt/batch', {
      batch_input: [{ ciphertext: 'svc:v1:AAAA' }, { ciphertext: 'nope' }],
      partial_failure_response_code: 207,
    });
    expect(allFailed.status).toBe(400);
    expect(allFailed.body.data.batch_results).toEqual([
      { error: expect.stringMatching(/invalid ciphertext|authentication/), reference: '' },
      { error: expect.stringMatching(/invalid ciphertext: no prefix/), reference: '' },
    ]);
  });

  test('a large batch answers with its exact byte length, and a wrapped batch unwraps to the same results', async () => {
    await ok('POST', 'transit/keys/large');
    const plaintexts = Array.from({ length: 2_000 }, (_, i) => b64(`item ${i} ✓`));
    const encrypted = await call('POST', 'transit/encrypt/large', { batch_input: plaintexts.map((plaintext, i) => ({ plaintext, reference: `r"${i}` })) });
    expect(encrypted.status).toBe(200);
    expect(Number(encrypted.headers['content-length'])).toBe(Buffer.byteLength(encrypted.text));
    const results = encrypted.body.data.batch_results as { ciphertext: string; reference: string }[];
    expect(results.map((r) => r.reference)).toEqual(plaintexts.map((_, i) => `r"${i}`));

    const wrapped = await api<Reply>(url, 'POST', '/v1/transit/decrypt/large', {
      token,
      body: { batch_input: results.slice(0, 3) },
      headers: { 'x-service-wrap-ttl': '60s' },
    });
    expect(wrapped.status).toBe(200);
    expect(wrapped.body.data).toBeNull();
    const unwrapped = await ok('POST', 'sys/wrapping/unwrap', undefined, wrapped.body.wrap_info.token);
    expect(unwrapped.batch_results).toEqual(plaintexts.slice(0, 3).map((plaintext, i) => ({ plaintext, reference: `r"${i}` })));
  });

  test('bad input per batch item and for the whole request is a 4xx naming the problem, never a 500, never the plaintext', async () => {
    await ok('POST', 'transit/keys/strict');
    const items = [
      [`"${SECRET}"`, SECRET, /not an object/],
      ['not base64', { plaintext: SECRET }, /plaintext is not valid base64/],
      ['too new a version', { plaintext: b64(SECRET), key_version: 9 }, /higher than the latest/],
      ['negative version', { plaintext: b64(SECRET), key_version: -1 }, /negative/],
      ['non-integer version', { plaintext: b64(SECRET), key_version: 'two' }, /key_version.*integer/],
      ['nonce on a random-nonce key', { plaintext: b64(SECRET), nonce: b64('123456789012') }, /nonce/],
      ['bad context', { plaintext: b64(SECRET), context: SECRET }, /context is not valid base64/],
      ['object plaintext', { plaintext: { secret: SECRET } }, /plaintext.*string/],
    ] as const;
    const res = await call('POST', 'transit/encrypt/strict', {
      batch_input: [{ plaintext: b64('fine') }, ...items.map(([, item]) => item)],
    });
    expect(res.status).toBe(400);
    expect(res.text).not.toContain(SECRET);
    const results: Data[] = res.body.data.batch_results;
    expect(results[0].ciphertext).toMatch(/^svc:v1:/);
    items.forEach(([what, , problem], index) => expect([what, results[index + 1].error]).toEqual([what, expect.stringMatching(problem)]));

    const ciphertext = results[0].ciphertext as string;
    const decrypt = await call('POST', 'transit/decrypt/strict', {
      batch_input: [
        { ciphertext },
        { ciphertext: ciphertext.replace('svc:v1:', 'svc:v7:') },
        { ciphertext: ciphertext.replace('svc:v1:', 'svc:vX:') },
        { ciphertext: `svc:v1:${b64(SECRET)}` },
        { ciphertext: 'svc:v1:@@@@' },
        { ciphertext: '' },
      ],
    });
    expect(decrypt.status).toBe(400);
    expect(decrypt.text).not.toContain(SECRET);
    expect(decrypt.body.data.batch_results.map((r: Data) => r.error ?? unb64(r.plaintext))).toEqual([
      'fine',
      expect.stringMatching(/newer than the latest/),
      expect.stringMatching(/version number/),
      expect.stringMatching(/authentication failed/),
      expect.stringMatching(/not valid base64/),
      expect.stringMatching(/missing ciphertext/),
    ]);

    await refused('POST', 'transit/encrypt/strict', { batch_input: SECRET }, /batch_input/);
    await refused('POST', 'transit/encrypt/strict', { batch_input: [] }, /at least one item/);
    const tooMany = Array.from({ length: 10_001 }, () => ({ plaintext: b64(SECRET) }));
    // The listener's JSON limits (Vault's defaults) refuse it before transit reads the batch.
    await refused('POST', 'transit/encrypt/strict', { batch_input: tooMany }, /max_json_array_element_count \(10000\)/);
    await refused('POST', 'transit/encrypt/strict', { plaintext: { value: SECRET } }, /plaintext/);
    await refused('POST', 'transit/encrypt/strict', {}, /missing plaintext/);
    await refused('POST', 'transit/encrypt/strict', { plaintext: b64(SECRET), partial_failure_response_code: 'soon' }, /partial_failure_response_code/);
    await refused('POST', 'transit/encrypt/strict', { plaintext: b64(SECRET), type: 'des' }, /type/);
    const malformed = await api(url, 'POST', '/v1/transit/encrypt/strict', { token, rawBody: `{"plaintext": "${SECRET}"` });
    expect(malformed.status).toBe(400);
    expect(malformed.text).not.toContain(SECRET);
    await refused('POST', 'transit/decrypt/missing-key', { ciphertext }, /not found/);
    await refused('POST', 'transit/decrypt/strict', { ciphertext: `svc:v1:${SECRET}` }, /not valid base64/);
  });

  test('sign and verify: ed25519, ecdsa-p256 with jws marshaling and rsa-pss, each checked with Node crypto', async () => {
    const message = b64('signed message');
    for (const type of ['ed25519', 'ecdsa-p256', 'rsa-2048']) await ok('POST', `transit/keys/sign-${type}`, { type });
    const publicKey = async (type: string) => createPublicKey((await ok('GET', `transit/export/public-key/sign-${type}/1`)).keys['1']);

    const ed = (await ok('POST', 'transit/sign/sign-ed25519', { input: message })).signature as string;
    expect(ed).toMatch(/^svc:v1:/);
    expect((await ok('POST', 'transit/verify/sign-ed25519', { input: message, signature: ed })).valid).toBe(true);
    expect((await ok('POST', 'transit/verify/sign-ed25519', { input: b64('other'), signature: ed })).valid).toBe(false);
    const edRaw = Buffer.from((await ok('GET', 'transit/keys/sign-ed25519')).keys['1'].public_key, 'base64');
    const edKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: edRaw.toString('base64url') }, format: 'jwk' });
    expect(cryptoVerify(null, Buffer.from('signed message'), edKey, Buffer.from(ed.split(':')[2], 'base64'))).toBe(true);

    const jws = (await ok('POST', 'transit/sign/sign-ecdsa-p256/sha2-256', { input: message, marshaling_algorithm: 'jws' })).signature as string;
    const jwsBytes = Buffer.from(jws.split(':')[2], 'base64url');
    expect(jwsBytes).toHaveLength(64);
    expect(jws.split(':')[2]).toMatch(/^[A-Za-z0-9_-]+$/);
    const ecKey = { key: await publicKey('ecdsa-p256'), dsaEncoding: 'ieee-p1363' as const };
    expect(cryptoVerify('sha256', Buffer.from('signed message'), ecKey, jwsBytes)).toBe(true);
    expect((await ok('POST', 'transit/verify/sign-ecdsa-p256', { input: message, signature: jws, marshaling_algorithm: 'jws' })).valid).toBe(true);

    const pss = (await ok('POST', 'transit/sign/sign-rsa-2048', { input: message, hash_algorithm: 'sha2-256', signature_algorithm: 'pss' })).signature as string;
    const rsaKey = { key: await publicKey('rsa-2048'), padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_AUTO };
    expect(cryptoVerify('sha256', Buffer.from('signed message'), rsaKey, Buffer.from(pss.split(':')[2], 'base64'))).toBe(true);
    expect((await ok('POST', 'transit/verify/sign-rsa-2048', { input: message, signature: pss, signature_algorithm: 'pss' })).valid).toBe(true);
    expect((await ok('POST', 'transit/verify/sign-rsa-2048', { input: message, signature: pss, signature_algorithm: 'pkcs1v15' })).valid).toBe(false);

    await refused('POST', 'transit/sign/type-aes256-gcm96', { input: message }, /does not support signing/);
    await refused('POST', 'transit/sign/sign-ed25519', { input: SECRET }, /input is not valid base64/);
    await refused('POST', 'transit/verify/sign-ed25519', { input: message, signature: 'svc:v1:!!' }, /signature|base64/);
  });

  test('hmac matches Node crypto with the exported HMAC key, and verifies', async () => {
    await ok('POST', 'transit/keys/mac', { type: 'hmac', exportable: true });
    const mac = (await ok('POST', 'transit/hmac/mac/sha2-512', { input: b64(SECRET) })).hmac as string;
    expect(mac).toMatch(/^svc:v1:/);
    const key = Buffer.from((await ok('GET', 'transit/export/hmac-key/mac/1')).keys['1'], 'base64');
    expect(mac.split(':')[2]).toBe(createHmac('sha512', key).update(SECRET).digest('base64'));
    expect((await ok('POST', 'transit/verify/mac/sha2-512', { input: b64(SECRET), hmac: mac })).valid).toBe(true);
    expect((await ok('POST', 'transit/verify/mac/sha2-256', { input: b64(SECRET), hmac: mac })).valid).toBe(false);
  });

  test('datakey, random and hash', async () => {
    await ok('POST', 'transit/keys/dk');
    const plain = await ok('POST', 'transit/datakey/plaintext/dk', { bits: 128 });
    expect(Buffer.from(plain.plaintext, 'base64')).toHaveLength(16);
    expect((await ok('POST', 'transit/decrypt/dk', { ciphertext: plain.ciphertext })).plaintext).toBe(plain.plaintext);
    const wrapped = await ok('POST', 'transit/datakey/wrapped/dk');
    expect(wrapped).toEqual({ ciphertext: expect.stringMatching(/^svc:v1:/), key_version: 1 });
    expect(Buffer.from((await ok('POST', 'transit/decrypt/dk', { ciphertext: wrapped.ciphertext })).plaintext, 'base64')).toHaveLength(32);
    await refused('POST', 'transit/datakey/plaintext/dk', { bits: 100 }, /bits must be 128, 256 or 512/);

    expect(Buffer.from((await ok('POST', 'transit/random/24')).random_bytes, 'base64')).toHaveLength(24);
    expect((await ok('POST', 'transit/random', { bytes: 8, format: 'hex' })).random_bytes).toMatch(/^[0-9a-f]{16}$/);
    await refused('POST', 'transit/random/0', undefined, /bytes must be between/);

    const sum = (await ok('POST', 'transit/hash/sha2-512', { input: b64(SECRET) })).sum;
    expect(sum).toBe(createHash('sha512').update(SECRET).digest('hex'));
    expect((await ok('POST', 'transit/hash', { input: b64(SECRET), format: 'base64' })).sum).toBe(createHash('sha256').update(SECRET).digest('base64'));
    await refused('POST', 'transit/hash/md5', { input: b64(SECRET) }, /urlalgorithm/);
  });

  test('backup from one mount restores into another, where old ciphertext decrypts', async () => {
    await ok('POST', 'transit/keys/saved', { exportable: true, allow_plaintext_backup: true });
    await ok('POST', 'transit/keys/saved/rotate');
    const v1 = (await ok('POST', 'transit/encrypt/saved', { plaintext: b64(SECRET), key_version: 1 })).ciphertext;
    const { backup } = await ok('GET', 'transit/backup/saved');
    await ok('POST', 'transit-b/restore', { backup });
    expect((await ok('GET', 'transit-b/keys/saved')).latest_version).toBe(2);
    expect(unb64((await ok('POST', 'transit-b/decrypt/saved', { ciphertext: v1 })).plaintext)).toBe(SECRET);
    await refused('POST', 'transit-b/restore', { backup }, /already exists/);
    await ok('POST', 'transit-b/restore/saved-copy', { backup });
    await refused('POST', 'transit-b/restore', { backup: b64('{"policy":{}}') }, /not a valid key backup/);
    await refused('GET', 'transit/backup/app', undefined, /allow_plaintext_backup/);
  });

  test('BYOK: a key exported for another mount’s wrapping key is imported there and decrypts the same data', async () => {
    const destinationWrappingKey = (await ok('GET', 'transit-b/wrapping_key')).public_key as string;
    expect(createPublicKey(destinationWrappingKey).asymmetricKeyDetails?.modulusLength).toBe(4096);
    await ok('POST', 'transit/keys/mount-b-wrapping/import', { type: 'rsa-4096', public_key: destinationWrappingKey });
    await ok('POST', 'transit/keys/byok', { exportable: true });
    const ciphertext = (await ok('POST', 'transit/encrypt/byok', { plaintext: b64(SECRET) })).ciphertext;

    const exported = await ok('GET', 'transit/byok-export/mount-b-wrapping/byok/latest');
    expect(Object.keys(exported.keys)).toEqual(['1']);
    const imported = await ok('POST', 'transit-b/keys/byok/import', { type: 'aes256-gcm96', ciphertext: exported.keys['1'] });
    expect(imported).toMatchObject({ imported: true, latest_version: 1 });
    expect(unb64((await ok('POST', 'transit-b/decrypt/byok', { ciphertext })).plaintext)).toBe(SECRET);
    await refused('GET', 'transit/byok-export/byok/app', undefined, /destination must be an RSA key/);
  });

  test('imports key material wrapped with Node crypto under the wrapping key read over HTTP', async () => {
    const wrappingKey = (await ok('GET', 'transit/wrapping_key')).public_key as string;
    const aesKey = randomBytes(32);
    await ok('POST', 'transit/keys/own-aes/import', { type: 'aes256-gcm96', ciphertext: wrapForImport(wrappingKey, aesKey), hash_function: 'SHA256' });
    const ciphertext = (await ok('POST', 'transit/encrypt/own-aes', { plaintext: b64(SECRET) })).ciphertext;
    expect(openLocally(aesKey, ciphertext)).toBe(SECRET);
    await refused('POST', 'transit/keys/own-aes/rotate', undefined, /allow_rotation/);

    const ecdsa = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const material = ecdsa.privateKey.export({ type: 'pkcs8', format: 'der' });
    await ok('POST', 'transit/keys/own-ec/import', { type: 'ecdsa-p256', ciphertext: wrapForImport(wrappingKey, material) });
    const signature = (await ok('POST', 'transit/sign/own-ec', { input: b64('mine') })).signature as string;
    expect(cryptoVerify('sha256', Buffer.from('mine'), ecdsa.publicKey, Buffer.from(signature.split(':')[2], 'base64'))).toBe(true);

    await refused('POST', 'transit/keys/own-bad/import', { type: 'aes256-gcm96', ciphertext: b64(SECRET) }, /too short/);
    const wrongKey = generateKeyPairSync('rsa', { modulusLength: 4096 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
    await refused('POST', 'transit/keys/own-bad/import', { type: 'aes256-gcm96', ciphertext: wrapForImport(wrongKey, aesKey) }, /could not be decrypted/);
    await refused('POST', 'transit/keys/own-bad/import', { type: 'aes256-gcm96', ciphertext: wrapForImport(wrappingKey, aesKey), hash_function: 'MD5' }, /hash function/);
  });

  test('a CSR signed by the key passes `openssl req -verify` and keeps the template subject', async () => {
    await ok('POST', 'transit/keys/cert', { type: 'ecdsa-p256' });
    const empty = await ok('POST', 'transit/keys/cert/csr');
    expect(empty).toMatchObject({ name: 'cert', version: 1, csr: expect.stringMatching(/^-----BEGIN CERTIFICATE REQUEST-----/) });
    expect(openssl(['req', '-verify', '-noout'], empty.csr)).toEqual({ status: 0, output: expect.stringMatching(/verify OK/) });

    const template = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-csr-'));
    let templateCsr: string;
    try {
      writeFileSync(path.join(dir, 'key.pem'), template.privateKey.export({ type: 'pkcs8', format: 'pem' }));
      templateCsr = execFileSync('openssl', ['req', '-new', '-key', path.join(dir, 'key.pem'), '-subj', '/CN=transit.example.com/O=Example'], { encoding: 'utf8' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const csr = (await ok('POST', 'transit/keys/cert/csr', { csr: templateCsr })).csr as string;
    expect(openssl(['req', '-noout', '-subject'], csr).output).toMatch(/CN\s*=\s*transit\.example\.com/);
    const keyPem = (await ok('GET', 'transit/keys/cert')).keys['1'].public_key as string;
    expect(openssl(['req', '-noout', '-pubkey'], csr).output.trim()).toBe(keyPem.trim());
    expect(openssl(['req', '-verify', '-noout'], csr)).toEqual({ status: 0, output: expect.stringMatching(/verify OK/) });
    await refused('POST', 'transit/keys/type-aes256-gcm96/csr', {}, /cannot have certificates/);
    await refused('POST', 'transit/keys/cert/csr', { csr: SECRET }, /csr is not a PEM certificate signing request/);
  });

  test('upsert: encrypt creates a missing key with `create` only; `update` alone cannot; disable_upsert turns create into update', async () => {
    const policy = async (name: string, capabilities: string[]) => {
      const hcl = `path "transit-upsert/encrypt/*" {\n  capabilities = ${JSON.stringify(capabilities)}\n}\n`;
      expect((await call('PUT', `sys/policies/acl/${name}`, { policy: hcl })).status).toBe(204);
      const created = await call('POST', 'auth/token/create', { policies: [name] });
      expect(created.status).toBe(200);
      return created.body.auth.client_token;
    };
    const creator = await policy('transit-creator', ['create']);
    const updater = await policy('transit-updater', ['update']);
    const encrypt = (name: string, as: string, body: Data = {}) => call('POST', `transit-upsert/encrypt/${name}`, { plaintext: b64(SECRET), ...body }, as);

    const byCreator = await encrypt('made-by-encrypt', creator);
    expect([byCreator.status, byCreator.body.data?.ciphertext]).toEqual([200, expect.stringMatching(/^svc:v1:/)]);
    expect(await ok('GET', 'transit-upsert/keys/made-by-encrypt')).toMatchObject({ type: 'aes256-gcm96', derived: false });
    expect((await encrypt('made-by-encrypt', creator)).status).toBe(403); // existing key: needs update
    expect((await encrypt('made-by-encrypt', updater)).status).toBe(200);

    const byUpdater = await encrypt('never-made', updater);
    expect(byUpdater.status).toBe(403);
    expect(byUpdater.text).not.toContain(SECRET);
    expect((await call('GET', 'transit-upsert/keys/never-made')).status).toBe(404);

    const derived = await encrypt('derived-by-encrypt', creator, { context: b64('ctx'), type: 'chacha20-poly1305' });
    expect(derived.status).toBe(200);
    expect(await ok('GET', 'transit-upsert/keys/derived-by-encrypt')).toMatchObject({ type: 'chacha20-poly1305', derived: true });

    expect(await ok('POST', 'transit-upsert/config/keys', { disable_upsert: true })).toEqual({ disable_upsert: true });
    expect(await ok('GET', 'transit-upsert/config/keys')).toEqual({ disable_upsert: true });
    expect((await encrypt('not-upserted', creator)).status).toBe(403);
    await refused('POST', 'transit-upsert/encrypt/not-upserted', { plaintext: b64(SECRET) }, /encryption key not found/);
    await refused('POST', 'transit-upsert/encrypt/not-upserted', { plaintext: b64(SECRET) }, /not found/, updater);
    expect((await encrypt('made-by-encrypt', updater)).status).toBe(200);
    await ok('POST', 'transit-upsert/config/keys', { disable_upsert: false });
    expect((await encrypt('upserted-again', creator)).status).toBe(200);
  });

  if (kind === 'distributed') {
    test('with the transit service gone, transit paths answer 503 naming the service at once', async () => {
      await topology.stopProcess('transit');
      const started = Date.now();
      const res = await api(url, 'POST', '/v1/transit/encrypt/app', { token, body: { plaintext: 'AAAA' } });
      expect(res.status).toBe(503);
      expect(res.body.errors[0]).toMatch(/transit/);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect((await api(url, 'GET', '/v1/sys/mounts', { token })).status).toBe(200);
    });
  }
});

describe('transit, distributed with two transit replicas', () => {
  let topology: Topology;
  let url: string;
  let token: string;
  const encrypt = async () => {
    const res = await api<Reply>(url, 'POST', '/v1/transit/encrypt/shared', { token, body: { plaintext: b64(SECRET) } });
    expect(res.status).toBe(200);
    return res.body.data.ciphertext as string;
  };
  /** Enough requests that the queue group sends some to each replica (all on one: 2^-31). */
  const REQUESTS = 32;

  beforeAll(async () => {
    topology = await startTopology('distributed', { services: ['transit', 'transit'] });
    url = topology.urls[0];
    ({ rootToken: token } = await initAndUnseal(url));
    expect((await api(url, 'POST', '/v1/sys/mounts/transit', { token, body: { type: 'transit' } })).status).toBe(204);
    await transitReady(url, token);
  }, 120_000);

  afterAll(() => topology?.stop());

  test('both replicas run, and a rotation through one is used by the other as soon as rotate answers', async () => {
    expect(topology.processes.filter((p) => p.name.startsWith('transit') && p.child.exitCode === null).map((p) => p.name)).toEqual(['transit', 'transit-1']);
    expect((await api(url, 'POST', '/v1/transit/keys/shared', { token })).status).toBe(200);
    // Both replicas now hold version 1 in their caches.
    for (let i = 0; i < REQUESTS; i++) expect(await encrypt()).toMatch(/^svc:v1:/);
    for (const version of [2, 3]) {
      const rotated = await api<Reply>(url, 'POST', '/v1/transit/keys/shared/rotate', { token });
      expect(rotated.body.data.latest_version).toBe(version);
      const ciphertexts = await Promise.all(Array.from({ length: REQUESTS }, encrypt));
      expect(ciphertexts.filter((c) => !c.startsWith(`svc:v${version}:`))).toEqual([]);
    }
  });

  test('with one replica stopped the other keeps serving, and decrypts what both encrypted', async () => {
    const before = await Promise.all(Array.from({ length: REQUESTS }, encrypt));
    await topology.stopProcess('transit');
    for (const ciphertext of before) {
      const res = await api<Reply>(url, 'POST', '/v1/transit/decrypt/shared', { token, body: { ciphertext } });
      expect([res.status, unb64(res.body.data.plaintext)]).toEqual([200, SECRET]);
    }
  });
});
