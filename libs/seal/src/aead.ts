import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** AES-256-GCM; output is iv || ciphertext || tag. `aad` binds the blob to its purpose so a
 * ciphertext stored or sent for one use cannot be replayed as another. */
export function aeadEncrypt(key: Uint8Array, plaintext: Uint8Array, aad: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]);
}

/** Throws when the key is wrong or the blob was altered (GCM authentication fails). */
export function aeadDecrypt(key: Uint8Array, blob: Uint8Array, aad: string): Buffer {
  if (blob.length < IV_BYTES + TAG_BYTES) throw new Error('ciphertext is truncated');
  const bytes = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
  return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]);
}
