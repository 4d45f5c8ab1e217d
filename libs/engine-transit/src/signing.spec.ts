import { spawnSync } from 'node:child_process';
import { constants, createHash, createHmac, createPublicKey, verify as cryptoVerify } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TransitMount, b64, failure } from './testing/harness';

const MESSAGE = Buffer.from('the message');
const signatureBytes = (signature: string, encoding: BufferEncoding = 'base64') => Buffer.from(signature.split(':')[2], encoding);

/** The signature with one bit of its last byte flipped. */
function tampered(signature: string, encoding: BufferEncoding = 'base64'): string {
  const bytes = signatureBytes(signature, encoding);
  bytes[bytes.length - 1] ^= 1;
  return `${signature.split(':').slice(0, 2).join(':')}:${bytes.toString(encoding)}`;
}

/** OpenSSL's own verdict: `pkeyutl -verify` checks a DER signature over the digest as given. */
function opensslVerifiesDigest(publicKeyPem: string, digest: Buffer, signature: Buffer): boolean {
  const dir = mkdtempSync(join(tmpdir(), 'prehashed-'));
  try {
    writeFileSync(join(dir, 'pub.pem'), publicKeyPem);
    writeFileSync(join(dir, 'digest.bin'), digest);
    writeFileSync(join(dir, 'sig.der'), signature);
    const args = ['pkeyutl', '-verify', '-pubin', '-inkey', 'pub.pem', '-in', 'digest.bin', '-sigfile', 'sig.der'];
    return spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' }).stdout.includes('Signature Verified Successfully');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('transit sign, verify, hmac, hash and random', () => {
  let transit: TransitMount;

  beforeAll(async () => {
    transit = TransitMount.create();
    for (const type of ['ed25519', 'ecdsa-p256', 'ecdsa-p384', 'ecdsa-p521', 'rsa-2048']) {
      await transit.write(`keys/${type}`, { type });
    }
  });

  const publicKeyOf = async (name: string) => createPublicKey((await transit.read(`export/public-key/${name}/1`)).keys['1']);

  it.each(['ecdsa-p256', 'ecdsa-p384', 'ecdsa-p521'])('signs with %s in DER and JWS form, verifiable by OpenSSL', async (name) => {
    const { signature, key_version } = await transit.write(`sign/${name}/sha2-384`, { input: b64(MESSAGE) });
    expect(key_version).toBe(1);
    expect(cryptoVerify('sha384', MESSAGE, await publicKeyOf(name), signatureBytes(signature))).toBe(true);
    expect((await transit.write(`verify/${name}/sha2-384`, { input: b64(MESSAGE), signature })).valid).toBe(true);
    expect((await transit.write(`verify/${name}/sha2-384`, { input: b64('other'), signature })).valid).toBe(false);

    const jws = (await transit.write(`sign/${name}`, { input: b64(MESSAGE), marshaling_algorithm: 'jws' })).signature;
    const raw = signatureBytes(jws, 'base64url');
    expect(cryptoVerify('sha256', MESSAGE, { key: await publicKeyOf(name), dsaEncoding: 'ieee-p1363' }, raw)).toBe(true);
    expect((await transit.write(`verify/${name}`, { input: b64(MESSAGE), signature: jws, marshaling_algorithm: 'jws' })).valid).toBe(true);
  });

  it.each([
    ['ecdsa-p256', 'sha2-256', 'sha256'],
    ['ecdsa-p256', 'sha3-512', 'sha3-512'],
    ['ecdsa-p384', 'sha2-384', 'sha384'],
    ['ecdsa-p521', 'sha2-512', 'sha512'],
    ['ecdsa-p521', 'sha2-224', 'sha224'],
  ])('signs and verifies prehashed input with %s and %s, as OpenSSL and the unhashed path do', async (name, hash, digestName) => {
    const digest = createHash(digestName).update(MESSAGE).digest();
    const publicKeyPem = (await transit.read(`keys/${name}`)).keys['1'].public_key;
    const signWith = async (input: Buffer, prehashed: boolean, marshaling_algorithm = 'asn1') =>
      (await transit.write(`sign/${name}/${hash}`, { input: b64(input), prehashed, marshaling_algorithm })).signature;
    const verifies = async (input: Buffer, prehashed: boolean, signature: string, marshaling_algorithm = 'asn1') =>
      (await transit.write(`verify/${name}/${hash}`, { input: b64(input), prehashed, signature, marshaling_algorithm })).valid;

    const prehashed = await signWith(digest, true);
    expect(opensslVerifiesDigest(publicKeyPem, digest, signatureBytes(prehashed))).toBe(true);
    expect(await verifies(digest, true, prehashed)).toBe(true);
    expect(await verifies(MESSAGE, false, prehashed)).toBe(true);
    expect(await verifies(digest, true, await signWith(MESSAGE, false))).toBe(true);

    const jws = await signWith(digest, true, 'jws');
    expect(cryptoVerify(digestName, MESSAGE, { key: createPublicKey(publicKeyPem), dsaEncoding: 'ieee-p1363' }, signatureBytes(jws, 'base64url'))).toBe(
      true,
    );
    expect(await verifies(digest, true, jws, 'jws')).toBe(true);
    expect(await verifies(digest, true, await signWith(MESSAGE, false, 'jws'), 'jws')).toBe(true);

    expect(opensslVerifiesDigest(publicKeyPem, digest, signatureBytes(tampered(prehashed)))).toBe(false);
    expect(await verifies(digest, true, tampered(prehashed))).toBe(false);
    expect(await verifies(digest, true, tampered(jws, 'base64url'), 'jws')).toBe(false);
    expect(await verifies(createHash(digestName).update('other').digest(), true, prehashed)).toBe(false);

    const length = digest.length;
    for (const wrong of [digest.subarray(1), Buffer.concat([digest, digest])]) {
      expect(await failure(signWith(wrong, true))).toEqual({ status: 400, message: `prehashed input must be a ${length}-byte digest for this hash algorithm` });
      expect((await failure(verifies(wrong, true, prehashed))).message).toMatch(`${length}-byte digest`);
    }
  });

  it('signs with ed25519, deterministically per context for derived keys', async () => {
    const { signature } = await transit.write('sign/ed25519', { input: b64(MESSAGE) });
    const publicKey = createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from((await transit.read('keys/ed25519')).keys['1'].public_key, 'base64').toString('base64url') },
      format: 'jwk',
    });
    expect(cryptoVerify(null, MESSAGE, publicKey, signatureBytes(signature))).toBe(true);

    await transit.write('keys/ed-derived', { type: 'ed25519', derived: true });
    const signWith = async (context: string) =>
      (await transit.write('sign/ed-derived', { input: b64(MESSAGE), context: b64(context) })).signature;
    const first = await signWith('ctx');
    expect(await signWith('ctx')).toBe(first);
    expect(await signWith('other')).not.toBe(first);
    expect((await transit.write('verify/ed-derived', { input: b64(MESSAGE), signature: first, context: b64('ctx') })).valid).toBe(true);
    expect((await transit.write('verify/ed-derived', { input: b64(MESSAGE), signature: first, context: b64('other') })).valid).toBe(false);
  });

  it('signs with RSA-PSS and PKCS#1 v1.5, including prehashed input', async () => {
    const publicKey = await publicKeyOf('rsa-2048');
    const pss = (await transit.write('sign/rsa-2048', { input: b64(MESSAGE), salt_length: 'hash' })).signature;
    const pssOptions = { key: publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 };
    expect(cryptoVerify('sha256', MESSAGE, pssOptions, signatureBytes(pss))).toBe(true);
    expect((await transit.write('verify/rsa-2048', { input: b64(MESSAGE), signature: pss })).valid).toBe(true);

    const pkcs1 = { signature_algorithm: 'pkcs1v15' };
    const plain = (await transit.write('sign/rsa-2048', { input: b64(MESSAGE), ...pkcs1 })).signature;
    const digest = createHash('sha256').update(MESSAGE).digest();
    const prehashed = (await transit.write('sign/rsa-2048', { input: b64(digest), prehashed: true, ...pkcs1 })).signature;
    // PKCS#1 v1.5 is deterministic: signing the digest equals signing the message.
    expect(prehashed).toBe(plain);
    expect(cryptoVerify('sha256', MESSAGE, { key: publicKey, padding: constants.RSA_PKCS1_PADDING }, signatureBytes(plain))).toBe(true);
    expect((await transit.write('verify/rsa-2048', { input: b64(digest), signature: prehashed, prehashed: true, ...pkcs1 })).valid).toBe(
      true,
    );
    const wrongDigest = await failure(transit.write('sign/rsa-2048', { input: b64('short'), prehashed: true, ...pkcs1 }));
    expect(wrongDigest.message).toMatch(/32-byte digest/);
  });

  it('refuses signing with keys and options that cannot sign', async () => {
    await transit.write('keys/aes');
    expect(await failure(transit.write('sign/aes', { input: b64(MESSAGE) }))).toEqual({
      status: 400,
      message: 'key type aes256-gcm96 does not support signing',
    });
    const prehashedRefusal = { status: 400, message: expect.stringMatching(/^prehashed input is supported only for ECDSA keys/) };
    expect(await failure(transit.write('sign/ed25519', { input: b64(MESSAGE), prehashed: true }))).toEqual(prehashedRefusal);
    const digest = b64(createHash('sha256').update(MESSAGE).digest());
    expect(await failure(transit.write('sign/rsa-2048', { input: digest, prehashed: true, signature_algorithm: 'pss' }))).toEqual(prehashedRefusal);
    expect(await failure(transit.write('verify/rsa-2048', { input: digest, prehashed: true, signature: 'svc:v1:AAAA' }))).toEqual(prehashedRefusal);
    expect((await failure(transit.write('sign/ecdsa-p256/none', { input: digest, prehashed: true }))).message).toMatch(/"none"/);
    expect((await failure(transit.write('sign/ecdsa-p256/none', { input: b64(MESSAGE) }))).status).toBe(400);
    expect((await failure(transit.write('sign/ecdsa-p256/md5', { input: b64(MESSAGE) }))).message).toMatch(/urlalgorithm/);
    expect((await failure(transit.write('verify/ecdsa-p256', { input: b64(MESSAGE), signature: 'svc:v9:AAAA' }))).status).toBe(400);
  });

  it('signs and verifies batches in order with references', async () => {
    const batch_input = ['a', 'b'].map((text) => ({ input: b64(text), reference: text }));
    const signed = (await transit.write('sign/ecdsa-p256', { batch_input })).batch_results;
    expect(signed.map((item: { reference: string }) => item.reference)).toEqual(['a', 'b']);
    const verified = await transit.write('verify/ecdsa-p256', {
      batch_input: [
        { input: b64('a'), signature: signed[0].signature, reference: 'a' },
        { input: b64('b'), signature: signed[0].signature, reference: 'b' },
      ],
    });
    expect(verified.batch_results).toEqual([
      { valid: true, reference: 'a' },
      { valid: false, reference: 'b' },
    ]);
  });

  it('computes and verifies HMACs with every key type, honouring min_decryption_version', async () => {
    await transit.write('keys/mac', { exportable: true });
    const { hmac } = await transit.write('hmac/mac/sha2-512', { input: b64(MESSAGE) });
    const key = Buffer.from((await transit.read('export/hmac-key/mac/1')).keys['1'], 'base64');
    expect(hmac).toBe(`svc:v1:${createHmac('sha512', key).update(MESSAGE).digest('base64')}`);
    expect((await transit.write('verify/mac/sha2-512', { input: b64(MESSAGE), hmac })).valid).toBe(true);
    expect((await transit.write('verify/mac', { input: b64(MESSAGE), hmac })).valid).toBe(false);

    await transit.write('keys/mac/rotate');
    await transit.write('keys/mac/config', { min_decryption_version: 2 });
    expect((await failure(transit.write('verify/mac/sha2-512', { input: b64(MESSAGE), hmac }))).status).toBe(400);

    await transit.write('keys/hm', { type: 'hmac', key_size: 64, exportable: true });
    const macKey = Buffer.from((await transit.read('export/hmac-key/hm')).keys['1'], 'base64');
    expect(macKey).toHaveLength(64);
    const batch = await transit.write('hmac/hm', { batch_input: [{ input: b64(MESSAGE) }, { input: 'bad!' }] });
    expect(batch.batch_results[0].hmac).toBe(`svc:v1:${createHmac('sha256', macKey).update(MESSAGE).digest('base64')}`);
    expect(batch.batch_results[1].error).toBe('input is not valid base64');
  });

  it('hashes input and returns random bytes', async () => {
    expect((await transit.write('hash/sha2-512', { input: b64(MESSAGE), format: 'base64' })).sum).toBe(
      createHash('sha512').update(MESSAGE).digest('base64'),
    );
    expect((await transit.write('hash', { input: b64(MESSAGE) })).sum).toBe(createHash('sha256').update(MESSAGE).digest('hex'));
    expect(Buffer.from((await transit.write('random')).random_bytes, 'base64')).toHaveLength(32);
    expect((await transit.write('random/16', { format: 'hex' })).random_bytes).toMatch(/^[0-9a-f]{32}$/);
    expect(Buffer.from((await transit.write('random/all/48')).random_bytes, 'base64')).toHaveLength(48);
    expect(Buffer.from((await transit.write('random/seal', { bytes: 8 })).random_bytes, 'base64')).toHaveLength(8);
    expect((await failure(transit.write('random/0'))).status).toBe(400);
    expect((await failure(transit.write('random/moon/8'))).status).toBe(400);
  });
});
