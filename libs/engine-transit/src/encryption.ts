import {
  constants,
  createCipheriv,
  createDecipheriv,
  createHmac,
  privateDecrypt,
  publicEncrypt,
  randomBytes,
  type CipherGCMTypes,
} from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import { decodeBase64, formatVersioned, parseVersioned } from './encoding';
import { deriveBytes } from './key-material';
import type { TransitKey, VersionMaterial } from './transit-key';

/** Per-request inputs besides the plaintext or ciphertext, all decoded from base64. */
export interface CipherOptions {
  context?: Buffer;
  nonce?: Buffer;
  associatedData?: Buffer;
}

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const RSA_OAEP_HASH = 'sha256';
const CONVERGENT_NONCE_INFO = Buffer.from('svc-transit convergent nonce');
/**
 * Random nonces are cut from one larger CSPRNG draw: a call into OpenSSL's RNG costs more than the
 * AES-GCM of a short plaintext, so one draw per 1,024 nonces instead of one each makes batch encrypt
 * about twice as fast. Each pool is used once, front to back, and never refilled in place.
 */
const NONCE_POOL_BYTES = NONCE_BYTES * 1024;
let noncePool: Buffer = Buffer.alloc(0);
let nonceOffset = 0;
/**
 * Sealed values up to this size are assembled in one reused buffer and base64-encoded from it, so a
 * batch item allocates no buffer of its own for nonce ‖ ciphertext ‖ tag. Larger ones get their own.
 */
const SEAL_BUFFER_BYTES = 4096;
const sealBuffer = Buffer.allocUnsafe(SEAL_BUFFER_BYTES);

/**
 * Encrypts with one version of the key. AEAD output is nonce ‖ ciphertext ‖ tag, so any standard
 * implementation decrypts it with the exported key; RSA keys use OAEP with SHA-256.
 */
export function encrypt(key: TransitKey, version: number, plaintext: Buffer, options: CipherOptions): string {
  if (!key.spec.supportsEncryption) throw ServiceError.badRequest(`key type ${key.spec.name} does not support encryption`);
  const material = key.material(version);
  if (key.spec.family === 'rsa') return formatVersioned(version, rsaEncrypt(material, plaintext, options).toString('base64'));
  return formatVersioned(version, aeadSeal(key, material, plaintext, options));
}

/** Decrypts `svc:v<n>:<base64>`; every failure is a 400 that never includes the data. */
export function decrypt(key: TransitKey, ciphertext: string, options: CipherOptions): Buffer {
  if (!key.spec.supportsDecryption) throw ServiceError.badRequest(`key type ${key.spec.name} does not support decryption`);
  const { version, body } = parseVersioned(ciphertext, 'ciphertext');
  key.checkReadVersion(version);
  const material = key.material(version);
  const sealed = decodeBase64(body, 'ciphertext');
  return key.spec.family === 'rsa' ? rsaDecrypt(material, sealed, options) : aeadOpen(key, material, sealed, options);
}

// The GCM typings describe ChaCha20-Poly1305's cipher objects as well (same AEAD methods).
function cipherName(key: TransitKey): CipherGCMTypes {
  return key.spec.cipher as CipherGCMTypes;
}

/** The base64 of nonce ‖ ciphertext ‖ tag. */
function aeadSeal(key: TransitKey, material: VersionMaterial, plaintext: Buffer, options: CipherOptions): string {
  const secret = key.symmetricKey(material, options.context);
  const nonce = key.stored.convergent_encryption ? convergentNonce(secret, plaintext, options.nonce) : randomNonce(options.nonce);
  const cipher = createCipheriv(cipherName(key), secret, nonce, { authTagLength: TAG_BYTES });
  if (options.associatedData) cipher.setAAD(options.associatedData);
  const body = cipher.update(plaintext);
  cipher.final(); // AEAD modes emit everything from update()
  const length = NONCE_BYTES + body.length + TAG_BYTES;
  const sealed = length <= SEAL_BUFFER_BYTES ? sealBuffer : Buffer.allocUnsafe(length);
  sealed.set(nonce, 0);
  sealed.set(body, NONCE_BYTES);
  sealed.set(cipher.getAuthTag(), NONCE_BYTES + body.length);
  return sealed.toString('base64', 0, length);
}

function aeadOpen(key: TransitKey, material: VersionMaterial, sealed: Buffer, options: CipherOptions): Buffer {
  if (sealed.length < NONCE_BYTES + TAG_BYTES) throw ServiceError.badRequest('invalid ciphertext: too short');
  const secret = key.symmetricKey(material, options.context);
  const decipher = createDecipheriv(cipherName(key), secret, sealed.subarray(0, NONCE_BYTES), { authTagLength: TAG_BYTES });
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  if (options.associatedData) decipher.setAAD(options.associatedData);
  const plaintext = decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES));
  try {
    decipher.final();
  } catch {
    throw ServiceError.badRequest('cipher: message authentication failed');
  }
  return plaintext;
}

/** Without convergent encryption every ciphertext gets a fresh random nonce; a client nonce is refused. */
function randomNonce(requested: Buffer | undefined): Buffer {
  if (requested && requested.length > 0) {
    throw ServiceError.badRequest('a nonce may only be given for keys with convergent encryption');
  }
  if (nonceOffset + NONCE_BYTES > noncePool.length) {
    noncePool = randomBytes(NONCE_POOL_BYTES);
    nonceOffset = 0;
  }
  nonceOffset += NONCE_BYTES;
  return noncePool.subarray(nonceOffset - NONCE_BYTES, nonceOffset);
}

/**
 * Convergent encryption: the nonce is an HMAC of the plaintext (and of the client's nonce, if any)
 * under a key derived from the per-context key, so the same plaintext and context give the same
 * ciphertext while different plaintexts never share a nonce.
 */
function convergentNonce(secret: Buffer, plaintext: Buffer, requested: Buffer | undefined): Buffer {
  if (requested && requested.length > 0 && requested.length !== NONCE_BYTES) {
    throw ServiceError.badRequest(`nonce must be exactly ${NONCE_BYTES} bytes`);
  }
  const mac = createHmac('sha256', deriveBytes(secret, CONVERGENT_NONCE_INFO, 32));
  if (requested) mac.update(requested);
  return mac.update(plaintext).digest().subarray(0, NONCE_BYTES);
}

function checkRsaOptions(options: CipherOptions): void {
  if (options.associatedData) throw ServiceError.badRequest('associated_data is not supported for RSA keys');
  if (options.nonce && options.nonce.length > 0) throw ServiceError.badRequest('a nonce is not supported for RSA keys');
}

function rsaEncrypt(material: VersionMaterial, plaintext: Buffer, options: CipherOptions): Buffer {
  checkRsaOptions(options);
  if (!material.publicKey) throw ServiceError.badRequest('key version has no public key');
  try {
    return publicEncrypt({ key: material.publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: RSA_OAEP_HASH }, plaintext);
  } catch {
    throw ServiceError.badRequest('plaintext is too long for RSA-OAEP with this key');
  }
}

function rsaDecrypt(material: VersionMaterial, sealed: Buffer, options: CipherOptions): Buffer {
  checkRsaOptions(options);
  if (!material.privateKey) throw ServiceError.badRequest('key version holds only a public key and cannot decrypt');
  try {
    return privateDecrypt({ key: material.privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: RSA_OAEP_HASH }, sealed);
  } catch {
    throw ServiceError.badRequest('invalid ciphertext: RSA-OAEP decryption failed');
  }
}
