import {
  constants,
  createDecipheriv,
  createPrivateKey,
  createPublicKey,
  privateDecrypt,
  type KeyObject,
} from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import { wrapKeyForImport } from '@svc/sdk';
import type { StorageView } from '@svc/storage';
import { decodeBase64 } from './encoding';
import { generatePair } from './key-material';
import { keyTypeSpec } from './key-types';

const WRAPPING_KEY_PATH = 'config/wrapping-key';
const WRAPPING_KEY_TYPE = 'rsa-4096';
/** AES key wrap with padding (RFC 5649) uses this alternative initial value. */
const KEY_WRAP_IV = Buffer.from('a65959a6', 'hex');
const EPHEMERAL_KEY_BYTES = 32;

/** Values of `hash_function` / `hash` mapped to OpenSSL digest names (with or without the dash). */
const OAEP_HASHES: Record<string, string> = { SHA1: 'sha1', SHA224: 'sha224', SHA256: 'sha256', SHA384: 'sha384', SHA512: 'sha512' };
const OAEP_HASH_NAMES: readonly string[] = Object.keys(OAEP_HASHES);

export function oaepHash(name: string): string {
  const digest = OAEP_HASHES[name.toUpperCase().replace('-', '')];
  if (!digest) throw ServiceError.badRequest(`unsupported hash function "${name}"; use one of ${OAEP_HASH_NAMES.join(', ')}`);
  return digest;
}

/**
 * The mount's import wrapping key: a 4096-bit RSA key made on first use and stored, so it stays the
 * same for the mount. Generation runs on the thread pool; if two replicas race, the first stored
 * key wins and the other is dropped.
 */
export class WrappingKey {
  private loading?: Promise<KeyObject>;

  privateKey(storage: StorageView): Promise<KeyObject> {
    this.loading ??= this.load(storage).catch((err: unknown) => {
      this.loading = undefined;
      throw err;
    });
    return this.loading;
  }

  async publicKeyPem(storage: StorageView): Promise<string> {
    return createPublicKey(await this.privateKey(storage)).export({ type: 'spki', format: 'pem' }).toString();
  }

  private async load(storage: StorageView): Promise<KeyObject> {
    const existing = await storage.get(WRAPPING_KEY_PATH);
    if (existing) return createPrivateKey(existing.toString('utf8'));
    const { privateKey } = await generatePair(keyTypeSpec(WRAPPING_KEY_TYPE));
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const kept = await storage.transaction(async (tx) => {
      await tx.lock(WRAPPING_KEY_PATH);
      const stored = await tx.get(WRAPPING_KEY_PATH);
      if (stored) return stored.toString('utf8');
      await tx.put(WRAPPING_KEY_PATH, Buffer.from(pem, 'utf8'));
      return pem;
    });
    return createPrivateKey(kept);
  }
}

/**
 * Opens the import format: RSA-OAEP(wrapping key) of an ephemeral AES-256 key (as long as the RSA
 * modulus: 512 bytes for the wrapping key), then the key material under AES key wrap with padding.
 */
export function unwrapKeyMaterial(wrappingKey: KeyObject, ciphertext: string, hashFunction: string): Buffer {
  const blob = decodeBase64(ciphertext, 'ciphertext');
  const wrappedKeyBytes = (wrappingKey.asymmetricKeyDetails?.modulusLength ?? 0) / 8;
  if (blob.length <= wrappedKeyBytes) {
    throw ServiceError.badRequest(`ciphertext is too short: the first ${wrappedKeyBytes} bytes are the wrapped AES key`);
  }
  let ephemeral: Buffer;
  try {
    ephemeral = privateDecrypt(
      { key: wrappingKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: oaepHash(hashFunction) },
      blob.subarray(0, wrappedKeyBytes),
    );
  } catch (err) {
    if (err instanceof ServiceError) throw err;
    throw ServiceError.badRequest('the wrapped AES key could not be decrypted with the wrapping key and hash_function');
  }
  if (ephemeral.length !== EPHEMERAL_KEY_BYTES) throw ServiceError.badRequest('the wrapped AES key must be 256 bits');
  try {
    const unwrap = createDecipheriv('id-aes256-wrap-pad', ephemeral, KEY_WRAP_IV);
    return Buffer.concat([unwrap.update(blob.subarray(wrappedKeyBytes)), unwrap.final()]);
  } catch {
    throw ServiceError.badRequest('the key material could not be unwrapped (AES key wrap with padding failed)');
  }
}

/** The inverse of unwrapKeyMaterial, for BYOK export to another cluster's wrapping key. */
export function wrapKeyMaterial(destination: KeyObject, material: Buffer, hashFunction: string): string {
  return wrapKeyForImport(destination, material, oaepHash(hashFunction));
}
