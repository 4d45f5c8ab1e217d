import { createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, type KeyObject } from 'node:crypto';
import { Keyring } from '@svc/storage';
import { aeadDecrypt, aeadEncrypt } from './aead';

/**
 * Sealing the keyring to one service process: an ephemeral X25519 sender key, ECDH with the
 * recipient's ephemeral public key, HKDF-SHA256 to an AES-256-GCM key. Only the process holding
 * the recipient private key (never stored, never sent) can open it.
 */

const PURPOSE = 'svc keyring transfer v1';

/** Wire form; every field is base64. Public keys are DER SubjectPublicKeyInfo. */
export interface SealedKeyring {
  senderPublicKey: string;
  ciphertext: string;
}

export interface TransferKeyPair {
  /** base64 DER SubjectPublicKeyInfo, what a receiver sends to the gateway. */
  publicKey: string;
  privateKey: KeyObject;
}

export function generateTransferKeyPair(): TransferKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('x25519');
  return { publicKey: encodePublicKey(publicKey), privateKey };
}

export function sealKeyringFor(recipientPublicKey: string, keyring: Keyring): SealedKeyring {
  return sealFor(recipientPublicKey, keyring.serialize(), PURPOSE);
}

/** Throws when the keyring was sealed for another recipient or altered in transit. */
export function openSealedKeyring(privateKey: KeyObject, sealed: SealedKeyring): Keyring {
  return Keyring.deserialize(openSealed(privateKey, sealed, PURPOSE, 'sealed keyring'));
}

/**
 * The same sealing for any bytes; `purpose` (bound into the key and the ciphertext) keeps a blob
 * sealed for one use from being opened as another.
 */
export function sealFor(recipientPublicKey: string, plaintext: Uint8Array, purpose: string): SealedKeyring {
  const recipient = decodePublicKey(recipientPublicKey);
  const sender = generateKeyPairSync('x25519');
  const senderPublicKey = encodePublicKey(sender.publicKey);
  const key = deriveKey(sender.privateKey, recipient, senderPublicKey, recipientPublicKey, purpose);
  return { senderPublicKey, ciphertext: aeadEncrypt(key, plaintext, purpose).toString('base64') };
}

/** Throws (naming `what`) when the blob was sealed for another recipient or purpose, or altered. */
export function openSealed(privateKey: KeyObject, sealed: SealedKeyring, purpose: string, what: string): Buffer {
  const recipientPublicKey = encodePublicKey(createPublicKey(privateKey));
  const key = deriveKey(privateKey, decodePublicKey(sealed.senderPublicKey), sealed.senderPublicKey, recipientPublicKey, purpose);
  try {
    return aeadDecrypt(key, Buffer.from(sealed.ciphertext, 'base64'), purpose);
  } catch {
    throw new Error(`${what} cannot be opened: it was sealed for another recipient or altered`);
  }
}

/** Both public keys go into the salt so the derived key is bound to this exact pair. */
function deriveKey(privateKey: KeyObject, peer: KeyObject, senderPublicKey: string, recipientPublicKey: string, purpose: string): Buffer {
  const shared = diffieHellman({ privateKey, publicKey: peer });
  const salt = Buffer.concat([Buffer.from(senderPublicKey, 'base64'), Buffer.from(recipientPublicKey, 'base64')]);
  return Buffer.from(hkdfSync('sha256', shared, salt, purpose, 32));
}

function encodePublicKey(key: KeyObject): string {
  return key.export({ format: 'der', type: 'spki' }).toString('base64');
}

export function decodePublicKey(base64: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey({ key: Buffer.from(base64, 'base64'), format: 'der', type: 'spki' });
  } catch {
    throw new Error('not a valid X25519 public key');
  }
  if (key.asymmetricKeyType !== 'x25519') throw new Error('not a valid X25519 public key');
  return key;
}
