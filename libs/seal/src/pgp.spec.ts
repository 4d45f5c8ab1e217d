import { ServiceError } from '@svc/api-contract';
import { decrypt, generateKey, readMessage } from 'openpgp';
import { encryptForPgpKey, fingerprint } from './pgp';

describe('PGP helpers', () => {
  it('accepts base64 binary, armored, and base64 armored public keys', async () => {
    const { publicKey, privateKey } = await generateKey({ userIDs: [{ name: 'Operator' }], format: 'object' });
    const forms = [
      Buffer.from(publicKey.write()).toString('base64'),
      publicKey.armor(),
      Buffer.from(publicKey.armor()).toString('base64'),
    ];
    for (const form of forms) {
      expect(await fingerprint(form)).toBe(publicKey.getFingerprint());
      const encrypted = await encryptForPgpKey(form, Buffer.from('share text'));
      const { data } = await decrypt({
        message: await readMessage({ binaryMessage: encrypted }),
        decryptionKeys: privateKey,
        format: 'binary',
      });
      expect(Buffer.from(data).toString()).toBe('share text');
    }
  });

  it('refuses a private key given in place of the public key', async () => {
    const { privateKey } = await generateKey({ userIDs: [{ name: 'Operator' }], format: 'object' });
    const err = await fingerprint(privateKey.armor(), 'pgp_keys[0]').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).errors).toEqual(['pgp_keys[0] is not a valid PGP public key']);
  });
});
