import { ServiceError } from '@svc/api-contract';
import { InmemPhysical, createView } from '@svc/storage';
import { decrypt, generateKey, readMessage } from 'openpgp';
import { decodeOtpToken } from '@svc/sdk';
import { GenerateRoot } from './generate-root';
import { Rekey, type RekeyCompletion } from './rekey';
import { ShamirSeal } from './seal';

const BUILD = { version: '0.1.0', buildDate: '2025-01-01T00:00:00Z' };
const ROOT_TOKEN = 'svs.0123456789abcdefghijklmnopqrstuv';

async function setUp(shares = 3, threshold = 2) {
  const physical = new InmemPhysical();
  const seal = new ShamirSeal(physical, BUILD);
  const { keys } = await seal.initialize({ secret_shares: shares, secret_threshold: threshold });
  const store = createView(physical, 'test/');
  const rekey = new Rekey(store, 'rekey', 'backup', seal.authorityKeys);
  const generateRoot = new GenerateRoot(store, 'generate-root', () => seal.authorityKeys, async () => ROOT_TOKEN, ROOT_TOKEN.length);
  return { seal, keys, rekey, generateRoot, store };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(ServiceError);
  expect((err as ServiceError).kind).toBe('bad-request');
  return (err as ServiceError).errors.join('; ');
}

async function unsealsWith(seal: ShamirSeal, keys: string[]): Promise<boolean> {
  await seal.seal();
  let opened = false;
  for (const key of keys) opened = (await seal.submitUnsealKey(key).catch(() => ({ keyring: undefined }))).keyring !== undefined;
  await seal.seal();
  return opened;
}

describe('Rekey of the unseal keys', () => {
  it('replaces the unseal key: the old shares stop working, the new ones unseal the same keyring', async () => {
    const { seal, keys, rekey } = await setUp();
    await seal.submitUnsealKey(keys[0]);
    const keyringBefore = (await seal.submitUnsealKey(keys[1])).keyring!.serialize();

    const started = await rekey.start({ secret_shares: 5, secret_threshold: 3 });
    expect(started).toMatchObject({ started: true, t: 3, n: 5, progress: 0, required: 2, verification_required: false });
    expect(await rekey.update(keys[0], started.nonce)).toMatchObject({ progress: 1, required: 2 });
    const done = (await rekey.update(keys[2], started.nonce)) as RekeyCompletion;
    expect(done.complete).toBe(true);
    expect(done.keys).toHaveLength(5);
    expect(done.keys_base64.map((k) => Buffer.from(k, 'base64').toString('hex'))).toEqual(done.keys);
    expect(await rekey.status()).toMatchObject({ started: false, required: 3 });

    expect(await unsealsWith(seal, keys.slice(0, 2))).toBe(false);
    await seal.submitUnsealKey(done.keys[4]);
    await seal.submitUnsealKey(done.keys[0]);
    expect((await seal.submitUnsealKey(done.keys[2])).keyring!.serialize()).toEqual(keyringBefore);
    expect(await seal.status()).toMatchObject({ t: 3, n: 5 });
  });

  it('checks the nonce, refuses a share given twice, and resets progress on a wrong set', async () => {
    const { keys, rekey, seal } = await setUp();
    const { nonce } = await rekey.start({ secret_shares: 1, secret_threshold: 1 });
    expect(await refusal(rekey.update(keys[0], 'not-the-nonce'))).toMatch(/nonce does not match/);
    await rekey.update(keys[0], nonce);
    expect(await refusal(rekey.update(keys[0], nonce))).toMatch(/already submitted/);
    expect(await refusal(rekey.start({ secret_shares: 1, secret_threshold: 1 }))).toMatch(/already in progress/);

    const other = await setUp();
    expect(await refusal(rekey.update(other.keys[1], nonce))).toMatch(/do not form.*progress has been reset/);
    expect(await rekey.status()).toMatchObject({ started: true, nonce, progress: 0 });
    await rekey.cancel();
    expect(await rekey.status()).toMatchObject({ started: false, nonce: '' });
    expect(await unsealsWith(seal, keys.slice(0, 2))).toBe(true);
  });

  it('with verification, rotates only once the new shares come back; restarting keeps the old keys', async () => {
    const { keys, rekey, seal } = await setUp();
    const { nonce } = await rekey.start({ secret_shares: 3, secret_threshold: 2, require_verification: true });
    await rekey.update(keys[0], nonce);
    const done = (await rekey.update(keys[1], nonce)) as RekeyCompletion;
    expect(done).toMatchObject({ complete: true, verification_required: true, verification_nonce: expect.any(String) });
    expect(await refusal(rekey.update(keys[2], nonce))).toMatch(/await verification/);

    const first = done.verification_nonce!;
    expect(await rekey.verify(done.keys[0], first)).toMatchObject({ nonce: first, progress: 1, t: 2, n: 3 });
    const restarted = await rekey.restartVerification();
    expect(restarted).toMatchObject({ progress: 0 });
    expect(restarted.nonce).not.toBe(first);
    expect(await refusal(rekey.verify(done.keys[1], first))).toMatch(/nonce does not match/);
    expect(await unsealsWith(seal, keys.slice(0, 2))).toBe(true);

    await rekey.verify(done.keys[1], restarted.nonce);
    expect(await rekey.verify(done.keys[2], restarted.nonce)).toEqual({ nonce: restarted.nonce, complete: true });
    expect(await unsealsWith(seal, keys.slice(0, 2))).toBe(false);
    expect(await unsealsWith(seal, done.keys.slice(1))).toBe(true);
  });

  it('encrypts the new shares to PGP keys and keeps a backup when asked', async () => {
    const { keys, rekey } = await setUp();
    const operator = await generateKey({ userIDs: [{ name: 'op' }], format: 'object' });
    const pgpKey = Buffer.from(operator.publicKey.write()).toString('base64');
    expect(await refusal(rekey.start({ secret_shares: 1, secret_threshold: 1, backup: true }))).toMatch(/backup requires pgp_keys/);
    expect(await refusal(rekey.start({ secret_shares: 2, secret_threshold: 2, pgp_keys: [pgpKey] }))).toMatch(/one entry per share/);
    const { nonce } = await rekey.start({ secret_shares: 2, secret_threshold: 2, pgp_keys: [pgpKey, pgpKey], backup: true });
    await rekey.update(keys[0], nonce);
    const done = (await rekey.update(keys[1], nonce)) as RekeyCompletion;
    const fingerprint = operator.publicKey.getFingerprint();
    expect(done.pgp_fingerprints).toEqual([fingerprint, fingerprint]);
    const { data } = await decrypt({ message: await readMessage({ binaryMessage: Buffer.from(done.keys[0], 'hex') }), decryptionKeys: operator.privateKey });
    expect(data).toMatch(/^[0-9a-f]{66}$/);
    expect(await rekey.backup()).toEqual({ nonce, keys: { [fingerprint]: done.keys } });
    await rekey.deleteBackup();
    expect(await rekey.backup()).toBeNull();
  });
});

describe('GenerateRoot', () => {
  it('returns the token XORed with the OTP, shown only when the attempt starts', async () => {
    const { keys, generateRoot } = await setUp();
    const started = await generateRoot.start(undefined);
    expect(started).toMatchObject({ started: true, progress: 0, required: 2, otp_length: ROOT_TOKEN.length });
    expect(started.otp).toHaveLength(ROOT_TOKEN.length);
    expect((await generateRoot.status()).otp).toBe('');
    await generateRoot.update(keys[2], started.nonce);
    const done = await generateRoot.update(keys[0], started.nonce);
    expect(done).toMatchObject({ complete: true, progress: 2 });
    expect(decodeOtpToken(done.encoded_token, started.otp)).toBe(ROOT_TOKEN);
    expect(done.encoded_root_token).toBe(done.encoded_token);
    expect(await generateRoot.status()).toMatchObject({ started: false });
  });

  it('refuses wrong shares with progress reset, and encrypts to a PGP key', async () => {
    const { keys, generateRoot } = await setUp(1, 1);
    const other = await setUp(1, 1);
    const operator = await generateKey({ userIDs: [{ name: 'op' }], format: 'object' });
    const started = await generateRoot.start(Buffer.from(operator.publicKey.write()).toString('base64'));
    expect(started).toMatchObject({ otp: '', pgp_fingerprint: operator.publicKey.getFingerprint() });
    expect(await refusal(generateRoot.update(other.keys[0], started.nonce))).toMatch(/do not form/);
    expect(await generateRoot.status()).toMatchObject({ started: true, progress: 0 });
    const done = await generateRoot.update(keys[0], started.nonce);
    const { data } = await decrypt({ message: await readMessage({ binaryMessage: Buffer.from(done.encoded_token, 'base64') }), decryptionKeys: operator.privateKey });
    expect(data).toBe(ROOT_TOKEN);
  });
});
