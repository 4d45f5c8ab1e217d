/**
 * The KMS emulator and its SigV4 check, driven by the real AWS SDK: signed requests verify and
 * really encrypt; a wrong secret, an unknown key id and the wrong region are refused with KMS's
 * JSON error shapes; keys resolve by id, ARN and alias; a rotated key still decrypts its old
 * ciphertexts; a disabled key refuses; the outage knob refuses connections or answers 500, and
 * the emulator serves again on the same address once restored.
 */
import {
  CreateAliasCommand,
  CreateKeyCommand,
  DecryptCommand,
  DescribeKeyCommand,
  DisableKeyCommand,
  EnableKeyCommand,
  EncryptCommand,
  KMSClient,
  RotateKeyOnDemandCommand,
} from '@aws-sdk/client-kms';
import { startKmsEmulator, type KmsEmulator } from './kms';

interface Keys {
  accessKeyId: string;
  secretAccessKey: string;
}

describe('KMS emulator', () => {
  let emulator: KmsEmulator;
  let keys: Keys;

  beforeAll(async () => {
    emulator = await startKmsEmulator({ region: 'eu-west-1' });
    keys = emulator.state.createCredentials();
  });
  afterAll(() => emulator.close());

  const kms = (credentials: Keys = keys, region = 'eu-west-1') => new KMSClient({ endpoint: emulator.url, region, credentials, maxAttempts: 1 });

  async function errorOf(promise: Promise<unknown>): Promise<{ name: string; status?: number; message: string }> {
    try {
      await promise;
    } catch (err) {
      const error = err as Error & { $metadata?: { httpStatusCode?: number } };
      return { name: error.name, status: error.$metadata?.httpStatusCode, message: error.message };
    }
    throw new Error('the call succeeded');
  }

  test('Encrypt and Decrypt round-trip; the ciphertext is not the plaintext and names its key', async () => {
    const created = await kms().send(new CreateKeyCommand({ Description: 'seal' }));
    const keyId = created.KeyMetadata?.KeyId as string;
    expect(created.KeyMetadata).toMatchObject({ Arn: `arn:aws:kms:eu-west-1:123456789012:key/${keyId}`, KeyState: 'Enabled', KeySpec: 'SYMMETRIC_DEFAULT' });
    const plaintext = Buffer.from('the root key, 32 bytes long.....');
    const encrypted = await kms().send(new EncryptCommand({ KeyId: keyId, Plaintext: plaintext }));
    expect(encrypted.KeyId).toBe(created.KeyMetadata?.Arn);
    expect(Buffer.from(encrypted.CiphertextBlob as Uint8Array).includes(plaintext)).toBe(false);
    const decrypted = await kms().send(new DecryptCommand({ CiphertextBlob: encrypted.CiphertextBlob }));
    expect(Buffer.from(decrypted.Plaintext as Uint8Array)).toEqual(plaintext);
    expect(decrypted.KeyId).toBe(created.KeyMetadata?.Arn);
  });

  test('keys resolve by ARN and alias; an encryption context must match; a changed blob is InvalidCiphertextException', async () => {
    const key = emulator.state.createKey();
    await kms().send(new CreateAliasCommand({ AliasName: 'alias/seal', TargetKeyId: key.id }));
    expect((await kms().send(new DescribeKeyCommand({ KeyId: 'alias/seal' }))).KeyMetadata?.KeyId).toBe(key.id);
    expect((await kms().send(new DescribeKeyCommand({ KeyId: key.arn }))).KeyMetadata?.KeyId).toBe(key.id);
    const encrypted = await kms().send(new EncryptCommand({ KeyId: 'alias/seal', Plaintext: Buffer.from('x'), EncryptionContext: { purpose: 'test' } }));
    expect(await errorOf(kms().send(new DecryptCommand({ CiphertextBlob: encrypted.CiphertextBlob })))).toMatchObject({ name: 'InvalidCiphertextException', status: 400 });
    const blob = Buffer.from(encrypted.CiphertextBlob as Uint8Array);
    blob[blob.length - 1] ^= 1;
    expect(await errorOf(kms().send(new DecryptCommand({ CiphertextBlob: blob, EncryptionContext: { purpose: 'test' } })))).toMatchObject({ name: 'InvalidCiphertextException', status: 400 });
    const other = emulator.state.createKey();
    expect(await errorOf(kms().send(new DecryptCommand({ CiphertextBlob: encrypted.CiphertextBlob, EncryptionContext: { purpose: 'test' }, KeyId: other.id })))).toMatchObject({ name: 'IncorrectKeyException', status: 400 });
    expect(await errorOf(kms().send(new DescribeKeyCommand({ KeyId: 'alias/missing' })))).toMatchObject({ name: 'NotFoundException', status: 400, message: 'Alias arn:aws:kms:eu-west-1:123456789012:alias/missing is not found.' });
  });

  test('after a rotation old ciphertexts still decrypt and new ones use the new material; a disabled key refuses', async () => {
    const key = emulator.state.createKey();
    const before = await kms().send(new EncryptCommand({ KeyId: key.id, Plaintext: Buffer.from('before') }));
    await kms().send(new RotateKeyOnDemandCommand({ KeyId: key.id }));
    expect(key.materials).toHaveLength(2);
    const after = await kms().send(new EncryptCommand({ KeyId: key.id, Plaintext: Buffer.from('after') }));
    expect(Buffer.from((await kms().send(new DecryptCommand({ CiphertextBlob: before.CiphertextBlob }))).Plaintext as Uint8Array).toString()).toBe('before');
    expect(Buffer.from((await kms().send(new DecryptCommand({ CiphertextBlob: after.CiphertextBlob }))).Plaintext as Uint8Array).toString()).toBe('after');

    await kms().send(new DisableKeyCommand({ KeyId: key.id }));
    expect(await errorOf(kms().send(new DecryptCommand({ CiphertextBlob: before.CiphertextBlob })))).toEqual({ name: 'DisabledException', status: 400, message: `${key.arn} is disabled.` });
    await kms().send(new EnableKeyCommand({ KeyId: key.id }));
    expect((await kms().send(new DecryptCommand({ CiphertextBlob: before.CiphertextBlob }))).Plaintext).toBeDefined();
  });

  test('a wrong secret is InvalidSignatureException, an unknown key id UnrecognizedClientException, another region refused', async () => {
    const describe = new DescribeKeyCommand({ KeyId: emulator.state.createKey().id });
    expect(await errorOf(kms({ ...keys, secretAccessKey: `${keys.secretAccessKey}x` }).send(describe))).toMatchObject({ name: 'InvalidSignatureException', status: 400, message: expect.stringMatching(/signature we calculated does not match/) });
    expect(await errorOf(kms({ accessKeyId: 'AKIAUNKNOWNUNKNOWN00', secretAccessKey: 'x' }).send(describe))).toMatchObject({ name: 'UnrecognizedClientException', status: 400 });
    expect(await errorOf(kms(keys, 'us-west-2').send(describe))).toMatchObject({ name: 'InvalidSignatureException', status: 400, message: expect.stringMatching(/valid region/) });
  });

  test('an outage refuses connections or answers 500, and the same address serves again once restored', async () => {
    const key = emulator.state.createKey();
    const describe = new DescribeKeyCommand({ KeyId: key.id });
    await emulator.outage('refuse-connections');
    expect((await errorOf(kms().send(describe))).message).toMatch(/ECONNREFUSED/);
    await emulator.restore();
    expect((await kms().send(describe)).KeyMetadata?.KeyId).toBe(key.id);

    await emulator.outage('internal-error');
    expect(await errorOf(kms().send(describe))).toMatchObject({ name: 'KMSInternalException', status: 500 });
    await emulator.restore();
    expect((await kms().send(describe)).KeyMetadata?.KeyId).toBe(key.id);
  });
});
