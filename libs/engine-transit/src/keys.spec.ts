import { MemoryLockManager } from '@svc/locks';
import { TransitMount, b64, failure } from './testing/harness';

describe('transit keys', () => {
  let transit: TransitMount;

  beforeEach(() => {
    transit = TransitMount.create();
  });

  it('creates an aes256-gcm96 key by default and reads every field', async () => {
    const created = await transit.write('keys/k');
    const read = await transit.read('keys/k');
    expect(read).toEqual(created);
    expect(read).toEqual({
      name: 'k',
      type: 'aes256-gcm96',
      deletion_allowed: false,
      derived: false,
      convergent_encryption: false,
      exportable: false,
      allow_plaintext_backup: false,
      keys: { '1': expect.any(Number) },
      latest_version: 1,
      min_available_version: 0,
      min_decryption_version: 1,
      min_encryption_version: 0,
      auto_rotate_period: 0,
      supports_encryption: true,
      supports_decryption: true,
      supports_derivation: true,
      supports_signing: false,
      imported: false,
    });
    expect(Math.abs(read.keys['1'] - Date.now() / 1000)).toBeLessThan(5);
  });

  it.each([
    ['ed25519', 'ed25519', /^[A-Za-z0-9+/]{43}=$/],
    ['ecdsa-p256', 'P-256', /^-----BEGIN PUBLIC KEY-----/],
    ['ecdsa-p384', 'P-384', /^-----BEGIN PUBLIC KEY-----/],
    ['ecdsa-p521', 'P-521', /^-----BEGIN PUBLIC KEY-----/],
    ['rsa-2048', 'rsa', /^-----BEGIN PUBLIC KEY-----/],
    ['rsa-3072', 'rsa', /^-----BEGIN PUBLIC KEY-----/],
  ])('returns the public key of %s keys', async (type, name, publicKey) => {
    const read = await transit.write('keys/a', { type });
    expect(read.keys['1']).toEqual({ creation_time: expect.any(String), name, public_key: expect.stringMatching(publicKey), certificate_chain: '' });
    expect(read.supports_signing).toBe(true);
  });

  it('validates creation options', async () => {
    const refused = async (body: Record<string, unknown>) => failure(transit.write('keys/bad', body));
    expect((await refused({ type: 'managed_key' })).message).toMatch(/enterprise/);
    expect((await refused({ type: 'des' })).message).toMatch(/field "type"/);
    expect((await refused({ convergent_encryption: true })).message).toMatch(/requires derivation/);
    expect((await refused({ type: 'ecdsa-p256', derived: true })).message).toMatch(/not supported/);
    expect((await refused({ auto_rotate_period: '30m' })).message).toMatch(/at least one hour/);
    expect((await refused({ key_size: 64 })).message).toMatch(/only valid for hmac/);
    expect((await refused({ type: 'hmac', key_size: 16 })).message).toMatch(/between 32 and 512/);
    expect((await refused({ type: 'hmac', key_size: 513 })).status).toBe(400);
    expect((await transit.write('keys/h', { type: 'hmac', key_size: 64 })).key_size).toBe(64);
    expect((await transit.write('keys/r', { auto_rotate_period: '2h' })).auto_rotate_period).toBe(7200);
  });

  it('needs the create capability for a new key and update for an existing one', async () => {
    expect((await failure(transit.write('keys/k', {}, ['update']))).status).toBe(403);
    await transit.write('keys/k', {}, ['create']);
    expect((await failure(transit.write('keys/k', {}, ['create']))).status).toBe(403);
  });

  it('lists keys and deletes only when deletion_allowed is set', async () => {
    await transit.write('keys/a');
    await transit.write('keys/b');
    expect((await transit.request('list', 'keys/'))!.data).toEqual({ keys: ['a', 'b'] });
    expect((await failure(transit.request('delete', 'keys/a'))).message).toMatch(/deletion is not allowed/);
    await transit.write('keys/a/config', { deletion_allowed: true });
    await transit.request('delete', 'keys/a');
    expect((await transit.request('list', 'keys/'))!.data).toEqual({ keys: ['b'] });
    expect((await failure(transit.read('keys/a'))).status).toBe(404);
  });

  it('applies the version rules of config and keeps irreversible flags set', async () => {
    await transit.write('keys/k');
    await transit.write('keys/k/rotate');
    await transit.write('keys/k/rotate');
    expect((await failure(transit.write('keys/k/config', { min_decryption_version: 4 }))).message).toMatch(/latest key version is 3/);
    expect((await failure(transit.write('keys/k/config', { min_decryption_version: 3, min_encryption_version: 2 }))).message).toMatch(
      /must be 0 or at least min_decryption_version/,
    );
    const tuned = await transit.write('keys/k/config', { min_decryption_version: 2, min_encryption_version: 3, exportable: true });
    expect(tuned).toMatchObject({ min_decryption_version: 2, min_encryption_version: 3, exportable: true });
    expect((await failure(transit.write('keys/k/config', { exportable: false }))).message).toMatch(/cannot be disabled/);
    await transit.write('keys/k/config', { allow_plaintext_backup: true });
    expect((await failure(transit.write('keys/k/config', { allow_plaintext_backup: false }))).status).toBe(400);
    expect((await failure(transit.write('keys/k/config', { auto_rotate_period: 60 }))).status).toBe(400);
    expect((await transit.write('keys/k/config', { auto_rotate_period: '1h' })).auto_rotate_period).toBe(3600);
    expect((await transit.write('keys/k/config', { deletion_allowed: true })).auto_rotate_period).toBe(3600);
  });

  it('rotates to a new version of the same size', async () => {
    await transit.write('keys/h', { type: 'hmac', key_size: 48, exportable: true });
    const rotated = await transit.write('keys/h/rotate');
    expect(rotated.latest_version).toBe(2);
    const exported = (await transit.read('export/hmac-key/h')).keys;
    expect(Object.keys(exported)).toEqual(['1', '2']);
    expect(Buffer.from(exported['2'], 'base64')).toHaveLength(48);
    expect(exported['2']).not.toBe(exported['1']);
  });

  it('trims versions below the minimum available version', async () => {
    await transit.write('keys/k');
    await transit.write('keys/k/rotate');
    await transit.write('keys/k/rotate');
    expect((await failure(transit.write('keys/k/trim', { min_available_version: 2 }))).message).toMatch(/min_encryption_version is 0/);
    await transit.write('keys/k/config', { min_decryption_version: 2, min_encryption_version: 3 });
    expect((await failure(transit.write('keys/k/trim', { min_available_version: 3 }))).status).toBe(400);
    const trimmed = await transit.write('keys/k/trim', { min_available_version: 2 });
    expect(Object.keys(trimmed.keys)).toEqual(['2', '3']);
    expect(trimmed.min_available_version).toBe(2);
    expect((await failure(transit.write('keys/k/trim', { min_available_version: 1 }))).message).toMatch(/decremented/);
  });

  it('rotates keys automatically once auto_rotate_period has elapsed', async () => {
    await transit.write('keys/auto', { auto_rotate_period: '1h' });
    await transit.write('keys/manual');
    await transit.periodic();
    expect((await transit.read('keys/auto')).latest_version).toBe(1);

    const later = Date.now() + 3601 * 1000;
    const clock = jest.spyOn(Date, 'now').mockReturnValue(later);
    try {
      await transit.periodic();
    } finally {
      clock.mockRestore();
    }
    expect((await transit.read('keys/auto')).latest_version).toBe(2);
    expect((await transit.read('keys/manual')).latest_version).toBe(1);
  });

  it('lets a replica see rotations, config changes and deletions made by another as soon as they answer', async () => {
    const replicaA = transit;
    const replicaB = TransitMount.create(replicaA, new MemoryLockManager());
    await replicaA.write('keys/shared');
    const v1 = (await replicaB.write('encrypt/shared', { plaintext: b64('one') })).ciphertext;

    await replicaA.write('keys/shared/rotate');
    // Concurrent requests: the later ones must wait for the re-validation the first one started,
    // not use the key it is replacing.
    const concurrent = await Promise.all(Array.from({ length: 8 }, () => replicaB.write('encrypt/shared', { plaintext: b64('two') })));
    expect(concurrent.map((result) => result.ciphertext.slice(0, 7))).toEqual(Array(8).fill('svc:v2:'));

    await replicaA.write('keys/shared/config', { min_decryption_version: 2, deletion_allowed: true });
    expect((await failure(replicaB.write('decrypt/shared', { ciphertext: v1 }))).message).toMatch(/min_decryption_version/);

    await replicaA.request('delete', 'keys/shared');
    expect((await failure(replicaB.write('encrypt/shared', { plaintext: b64('x') }, ['update']))).status).toBe(403);
  });

  it('bounds the key cache with cache-config', async () => {
    expect(await transit.read('cache-config')).toEqual({ size: 0 });
    expect((await failure(transit.write('cache-config', { size: 5 }))).status).toBe(400);
    await transit.write('cache-config', { size: 10 });
    expect(await transit.read('cache-config')).toEqual({ size: 10 });
    for (let index = 0; index < 12; index++) await transit.write(`keys/k${index}`);
    // Evicted keys are read from storage again.
    expect((await transit.read('keys/k0')).name).toBe('k0');
  });
});
