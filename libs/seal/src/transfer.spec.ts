import { Keyring } from '@svc/storage';
import { generateTransferKeyPair, openSealedKeyring, sealKeyringFor } from './transfer';

describe('keyring transfer', () => {
  const keyring = Keyring.generate().rotate();

  it('opens with the recipient private key to the same keyring', () => {
    const recipient = generateTransferKeyPair();
    const sealed = sealKeyringFor(recipient.publicKey, keyring);
    expect(Buffer.from(sealed.ciphertext, 'base64').includes(keyring.active().key)).toBe(false);
    const opened = openSealedKeyring(recipient.privateKey, sealed);
    expect(opened.serialize()).toEqual(keyring.serialize());
  });

  it('uses a fresh sender key each time', () => {
    const recipient = generateTransferKeyPair();
    const a = sealKeyringFor(recipient.publicKey, keyring);
    const b = sealKeyringFor(recipient.publicKey, keyring);
    expect(a.senderPublicKey).not.toBe(b.senderPublicKey);
  });

  it('cannot be opened by another recipient or after tampering', () => {
    const recipient = generateTransferKeyPair();
    const sealed = sealKeyringFor(recipient.publicKey, keyring);
    expect(() => openSealedKeyring(generateTransferKeyPair().privateKey, sealed)).toThrow(
      'sealed keyring cannot be opened: it was sealed for another recipient or altered',
    );
    const bytes = Buffer.from(sealed.ciphertext, 'base64');
    bytes[20] ^= 1;
    expect(() => openSealedKeyring(recipient.privateKey, { ...sealed, ciphertext: bytes.toString('base64') })).toThrow(
      'cannot be opened',
    );
  });

  it('rejects a recipient key that is not X25519', () => {
    expect(() => sealKeyringFor('AAAA', keyring)).toThrow('not a valid X25519 public key');
  });
});
