import { constants, createCipheriv, publicEncrypt, randomBytes, type KeyObject } from 'node:crypto';

/** AES key wrap with padding (RFC 5649) uses this alternative initial value. */
const KEY_WRAP_IV = Buffer.from('a65959a6', 'hex');
const EPHEMERAL_KEY_BYTES = 32;

/**
 * Key material in transit's import format, as Vault's BYOK: a fresh AES-256 key encrypted with
 * RSA-OAEP under the wrapping key (`oaepHash` an OpenSSL digest name), followed by the material
 * under AES key wrap with padding with that AES key; base64.
 */
export function wrapKeyForImport(wrappingKey: KeyObject | string, material: Uint8Array, oaepHash = 'sha256'): string {
  const ephemeral = randomBytes(EPHEMERAL_KEY_BYTES);
  const wrappedKey = publicEncrypt({ key: wrappingKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash }, ephemeral);
  const wrap = createCipheriv('id-aes256-wrap-pad', ephemeral, KEY_WRAP_IV);
  return Buffer.concat([wrappedKey, wrap.update(material), wrap.final()]).toString('base64');
}
