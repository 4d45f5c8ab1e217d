import { execFileSync } from 'node:child_process';
import {
  constants,
  createCipheriv,
  createDecipheriv,
  createPublicKey,
  generateKeyPairSync,
  publicEncrypt,
  randomBytes,
  sign as cryptoSign,
  verify as cryptoVerify,
} from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TransitMount, b64, failure, unb64, type Data } from './testing/harness';

/** Wraps key material in the import format with Node's crypto directly, as a client would. */
function wrapForImport(wrappingKeyPem: string, material: Buffer, hash = 'sha256'): string {
  const ephemeral = randomBytes(32);
  const wrappedKey = publicEncrypt({ key: wrappingKeyPem, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: hash }, ephemeral);
  const wrap = createCipheriv('id-aes256-wrap-pad', ephemeral, Buffer.from('a65959a6', 'hex'));
  return Buffer.concat([wrappedKey, wrap.update(material), wrap.final()]).toString('base64');
}

function openssl(args: string[], input?: string): string {
  return execFileSync('/usr/bin/openssl', args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
}

describe('transit import, export, backup and certificates', () => {
  let mountA: TransitMount;
  let mountB: TransitMount;
  let wrappingKeyA: string;
  let workDir: string;

  beforeAll(async () => {
    mountA = TransitMount.create();
    mountB = TransitMount.create();
    // RSA-4096 generation is slow: the two wrapping keys and one rsa-4096 key are made once here.
    const [a] = await Promise.all([
      mountA.read('wrapping_key'),
      mountB.read('wrapping_key'),
      mountA.write('keys/rsa4096', { type: 'rsa-4096', exportable: true }),
    ]);
    wrappingKeyA = a.public_key;
    workDir = mkdtempSync(join(tmpdir(), 'transit-spec-'));
  }, 60_000);

  afterAll(() => {
    rmSync(workDir, { recursive: true, force: true });
  });

  it('serves a stable 4096-bit RSA wrapping key per mount', async () => {
    expect(createPublicKey(wrappingKeyA).asymmetricKeyDetails?.modulusLength).toBe(4096);
    expect((await mountA.read('wrapping_key')).public_key).toBe(wrappingKeyA);
    expect((await mountB.read('wrapping_key')).public_key).not.toBe(wrappingKeyA);
    // A new backend over the same storage (a restart or a replica) keeps the stored key.
    expect((await TransitMount.create(mountA).read('wrapping_key')).public_key).toBe(wrappingKeyA);
  });

  it('imports an AES key wrapped by the client and decrypts the same data as the raw key', async () => {
    const material = randomBytes(32);
    const imported = await mountA.write('keys/imported-aes/import', {
      type: 'aes256-gcm96',
      ciphertext: wrapForImport(wrappingKeyA, material, 'sha1'),
      hash_function: 'SHA1',
    });
    expect(imported).toMatchObject({ imported: true, allow_rotation: false, latest_version: 1 });

    const { ciphertext } = await mountA.write('encrypt/imported-aes', { plaintext: b64('imported') });
    const raw = Buffer.from(ciphertext.split(':')[2], 'base64');
    const decipher = createDecipheriv('aes-256-gcm', material, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(raw.length - 16));
    expect(Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString()).toBe('imported');

    expect((await failure(mountA.write('keys/imported-aes/rotate'))).message).toMatch(/does not allow rotation/);
    expect((await failure(mountA.write('keys/imported-aes/import', { type: 'aes256-gcm96', ciphertext: 'x' }))).message).toMatch(
      /already exists/,
    );
  });

  it('refuses import material that does not fit, or that is not wrapped with the wrapping key', async () => {
    const wrongSize = await failure(
      mountA.write('keys/bad/import', { type: 'aes256-gcm96', ciphertext: wrapForImport(wrappingKeyA, randomBytes(16)) }),
    );
    expect(wrongSize.message).toBe('imported key material must be 32 bytes for type aes256-gcm96');
    const otherKey = (await mountB.read('wrapping_key')).public_key;
    const foreign = await failure(
      mountA.write('keys/bad/import', { type: 'aes256-gcm96', ciphertext: wrapForImport(otherKey, randomBytes(32)) }),
    );
    expect(foreign.status).toBe(400);
    expect((await failure(mountA.write('keys/bad/import', { type: 'aes256-gcm96', ciphertext: b64('short') }))).message).toMatch(
      /too short/,
    );
    expect((await failure(mountA.write('keys/bad/import', { type: 'hmac', ciphertext: 'x', derived: true }))).status).toBe(400);
  });

  it('imports versions into imported keys, and rotation ends imports', async () => {
    const pair = () => generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const first = pair();
    const pkcs8 = (key: typeof first) => key.privateKey.export({ type: 'pkcs8', format: 'der' });
    await mountA.write('keys/ec/import', { type: 'ecdsa-p256', ciphertext: wrapForImport(wrappingKeyA, pkcs8(first)), allow_rotation: true });
    const second = pair();
    const updated = await mountA.write('keys/ec/import_version', { ciphertext: wrapForImport(wrappingKeyA, pkcs8(second)) });
    expect(updated.latest_version).toBe(2);

    const { signature } = await mountA.write('sign/ec', { input: b64('data') });
    expect(cryptoVerify('sha256', Buffer.from('data'), second.publicKey, Buffer.from(signature.split(':')[2], 'base64'))).toBe(true);

    await mountA.write('keys/ec/rotate');
    const afterRotation = await failure(mountA.write('keys/ec/import_version', { ciphertext: wrapForImport(wrappingKeyA, pkcs8(pair())) }));
    expect(afterRotation.message).toMatch(/rotated inside the service/);

    await mountA.write('keys/generated', { type: 'ecdsa-p256' });
    const generated = await failure(mountA.write('keys/generated/import_version', { ciphertext: wrapForImport(wrappingKeyA, pkcs8(pair())) }));
    expect(generated.message).toMatch(/generated by the service/);
  });

  it('imports a public key only, for verification and encryption, and completes it with the private key later', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    await mountA.write('keys/pub/import', { type: 'rsa-2048', public_key: publicPem });

    const signature = cryptoSign('sha256', Buffer.from('signed elsewhere'), { key: privateKey, padding: constants.RSA_PKCS1_PSS_PADDING });
    const verified = await mountA.write('verify/pub', { input: b64('signed elsewhere'), signature: `svc:v1:${signature.toString('base64')}` });
    expect(verified.valid).toBe(true);
    const { ciphertext } = await mountA.write('encrypt/pub', { plaintext: b64('for the holder') });
    expect((await failure(mountA.write('decrypt/pub', { ciphertext }))).message).toMatch(/only a public key/);
    expect((await failure(mountA.write('sign/pub', { input: b64('x') }))).status).toBe(400);

    const mismatched = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'der' });
    const refused = await failure(mountA.write('keys/pub/import_version', { ciphertext: wrapForImport(wrappingKeyA, mismatched), version: 1 }));
    expect(refused.message).toMatch(/does not match the public key of version 1/);
    const completed = await mountA.write('keys/pub/import_version', {
      ciphertext: wrapForImport(wrappingKeyA, privateKey.export({ type: 'pkcs8', format: 'der' })),
    });
    expect(completed.latest_version).toBe(1);
    expect(unb64((await mountA.write('decrypt/pub', { ciphertext })).plaintext)).toBe('for the holder');
  });

  it('exports key material of exportable keys in each format', async () => {
    await mountA.write('keys/hidden');
    expect((await failure(mountA.read('export/encryption-key/hidden'))).message).toBe('key "hidden" is not exportable');
    await mountA.write('keys/sym', { exportable: true });
    await mountA.write('keys/sym/rotate');
    const all = await mountA.read('export/encryption-key/sym');
    expect(Object.keys(all.keys)).toEqual(['1', '2']);
    expect(Buffer.from(all.keys['2'], 'base64')).toHaveLength(32);
    expect(Object.keys((await mountA.read('export/encryption-key/sym/latest')).keys)).toEqual(['2']);
    expect((await failure(mountA.read('export/signing-key/sym'))).message).toMatch(/not supported for key type aes256-gcm96/);
    expect((await failure(mountA.read('export/encryption-key/sym/7'))).status).toBe(400);

    const rsa = await mountA.read('export/encryption-key/rsa4096/1');
    expect(rsa.keys['1']).toMatch(/^-----BEGIN RSA PRIVATE KEY-----/);
    expect((await mountA.read('export/public-key/rsa4096')).keys['1']).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    const { ciphertext } = await mountA.write('encrypt/rsa4096', { plaintext: b64('rsa 4096') });
    expect(unb64((await mountA.write('decrypt/rsa4096', { ciphertext })).plaintext)).toBe('rsa 4096');

    await mountA.write('keys/ed', { type: 'ed25519', exportable: true });
    expect(Buffer.from((await mountA.read('export/signing-key/ed')).keys['1'], 'base64')).toHaveLength(64);
    await mountA.write('keys/ecx', { type: 'ecdsa-p384', exportable: true });
    expect((await mountA.read('export/signing-key/ecx')).keys['1']).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
    expect((await failure(mountA.read('export/certificate-chain/ecx'))).message).toMatch(/no certificate chain/);
  });

  it('exports a key for another mount with byok-export, which that mount imports', async () => {
    const wrappingKeyB = (await mountB.read('wrapping_key')).public_key;
    await mountA.write('keys/b-wrapping/import', { type: 'rsa-4096', public_key: wrappingKeyB });
    await mountA.write('keys/moving', { type: 'chacha20-poly1305', exportable: true });
    const { ciphertext } = await mountA.write('encrypt/moving', { plaintext: b64('travels') });

    const exported = await mountA.read('byok-export/b-wrapping/moving');
    expect(exported).toEqual({ name: 'moving', type: 'chacha20-poly1305', keys: { '1': expect.any(String) } });
    await mountB.write('keys/arrived/import', { type: 'chacha20-poly1305', ciphertext: exported.keys['1'] });
    expect(unb64((await mountB.write('decrypt/arrived', { ciphertext })).plaintext)).toBe('travels');

    await mountA.write('keys/signer', { type: 'ed25519', exportable: true });
    const signer = (await mountA.read('byok-export/b-wrapping/signer/latest')).keys['1'];
    await mountB.write('keys/signer/import', { type: 'ed25519', ciphertext: signer });
    const { signature } = await mountB.write('sign/signer', { input: b64('same key') });
    expect((await mountA.write('verify/signer', { input: b64('same key'), signature })).valid).toBe(true);

    expect((await failure(mountA.read('byok-export/moving/signer'))).message).toMatch(/destination must be an RSA key/);
  });

  it('backs up and restores keys that allow plaintext backup', async () => {
    await mountA.write('keys/precious', { exportable: true });
    expect((await failure(mountA.read('backup/precious'))).message).toMatch(/allow_plaintext_backup and exportable/);
    await mountA.write('keys/precious/config', { allow_plaintext_backup: true });
    const { ciphertext } = await mountA.write('encrypt/precious', { plaintext: b64('kept safe') });
    const { backup } = await mountA.read('backup/precious');

    await mountB.write('restore/recovered', { backup });
    expect(unb64((await mountB.write('decrypt/recovered', { ciphertext })).plaintext)).toBe('kept safe');
    await mountB.write('restore', { backup });
    expect((await mountB.read('keys/precious')).name).toBe('precious');
    expect((await failure(mountB.write('restore', { backup }))).message).toMatch(/already exists/);
    await mountB.write('restore', { backup, force: true });
    expect((await failure(mountB.write('restore/x', { backup: b64('{"policy":{}}') }))).message).toBe('backup is not a valid key backup');
  });

  describe('certificates', () => {
    const write = (name: string, text: string): string => {
      const path = join(workDir, name);
      writeFileSync(path, text);
      return path;
    };

    it('signs a CSR with the key, honouring the template', async () => {
      await mountA.write('keys/tls', { type: 'ecdsa-p256' });
      const templateKey = write('template.key', openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256']));
      const template = openssl([
        'req', '-new', '-key', templateKey, '-subj', '/CN=service.example/O=Example',
        '-addext', 'subjectAltName=DNS:service.example,DNS:alt.example',
      ]);
      const { csr, version, name } = await mountA.write('keys/tls/csr', { csr: template });
      expect({ name, version }).toEqual({ name: 'tls', version: 1 });

      const csrPath = write('signed.csr', csr);
      const text = openssl(['req', '-in', csrPath, '-verify', '-noout', '-text']);
      expect(text).toMatch(/CN\s*=\s*service\.example/);
      expect(text).toContain('DNS:alt.example');
      const csrKey = openssl(['req', '-in', csrPath, '-noout', '-pubkey']);
      const keyPublic = (await mountA.read('keys/tls')).keys['1'].public_key;
      expect(createPublicKey(csrKey).export({ format: 'jwk' })).toEqual(createPublicKey(keyPublic).export({ format: 'jwk' }));

      const empty = await mountA.write('keys/tls/csr');
      expect(openssl(['req', '-in', write('empty.csr', empty.csr), '-verify', '-noout'], undefined)).toBe('');
      expect((await failure(mountA.write('keys/tls/csr', { csr: 'not a csr' }))).status).toBe(400);
    });

    it('sets a certificate chain whose leaf matches the key, and refuses others', async () => {
      await mountA.write('keys/leaf', { type: 'rsa-2048', exportable: true });
      const keyPem = write('leaf.key', (await mountA.read('export/signing-key/leaf')).keys['1']);
      const certificate = openssl(['req', '-x509', '-key', keyPem, '-subj', '/CN=leaf', '-days', '1']);
      await mountA.write('keys/leaf/set-certificate', { certificate_chain: certificate });
      const stored: Data = (await mountA.read('keys/leaf')).keys['1'];
      const exported = (await mountA.read('export/certificate-chain/leaf')).keys['1'];
      expect(stored.certificate_chain).toBe(exported);
      expect(openssl(['x509', '-noout', '-subject', '-in', write('exported.pem', exported)])).toMatch(/CN\s*=\s*leaf/);

      const otherKey = write('other.key', openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048']));
      const foreign = openssl(['req', '-x509', '-key', otherKey, '-subj', '/CN=other', '-days', '1']);
      expect((await failure(mountA.write('keys/leaf/set-certificate', { certificate_chain: foreign }))).message).toMatch(
        /does not match key version 1/,
      );
      expect((await failure(mountA.write('keys/leaf/set-certificate', { certificate_chain: 'junk' }))).status).toBe(400);
    });
  });
});
