import {
  createPrivateKey,
  createPublicKey,
  generateKeyPair,
  hkdfSync,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import { HMAC_KEY_SIZE, isAsymmetric, type KeyTypeSpec } from './key-types';

/** One key version as stored (inside the barrier). Binary values are base64. */
export interface StoredVersion {
  /** Unix milliseconds. */
  creation_time: number;
  /** AEAD key or HMAC-type key. */
  key?: string;
  /** Asymmetric private key, PKCS#8 DER; absent for public-key-only imports. */
  private_key?: string;
  /** Asymmetric public key, SPKI DER. */
  public_key?: string;
  /** The second key every type has for the hmac endpoints. */
  hmac_key: string;
  /** PEM chain set through set-certificate, leaf first. */
  certificate_chain?: string;
}

const HMAC_SECOND_KEY_BYTES = 32;
/** OpenSSL's names for the NIST curves, as KeyObject.asymmetricKeyDetails reports them. */
const OPENSSL_CURVES: Record<string, string> = { 'P-256': 'prime256v1', 'P-384': 'secp384r1', 'P-521': 'secp521r1' };
/** PKCS#8 header of an Ed25519 private key (RFC 8410): the 32-byte seed follows it. */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export interface KeyPair {
  publicKey: KeyObject;
  privateKey: KeyObject;
}

/** Generates asymmetric keys on libuv's thread pool: RSA-4096 takes seconds. */
export function generatePair(spec: KeyTypeSpec): Promise<KeyPair> {
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, publicKey: KeyObject, privateKey: KeyObject): void =>
      err ? reject(err) : resolve({ publicKey, privateKey });
    if (spec.family === 'rsa') generateKeyPair('rsa', { modulusLength: spec.modulusBits ?? 2048 }, done);
    else if (spec.family === 'ecdsa') generateKeyPair('ec', { namedCurve: spec.curve ?? 'P-256' }, done);
    else generateKeyPair('ed25519', {}, done);
  });
}

function versionFromPair(pair: Partial<KeyPair> & { publicKey: KeyObject }): StoredVersion {
  return {
    creation_time: Date.now(),
    private_key: pair.privateKey?.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
    public_key: pair.publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    hmac_key: randomBytes(HMAC_SECOND_KEY_BYTES).toString('base64'),
  };
}

function symmetricVersion(key: Buffer): StoredVersion {
  return {
    creation_time: Date.now(),
    key: key.toString('base64'),
    hmac_key: randomBytes(HMAC_SECOND_KEY_BYTES).toString('base64'),
  };
}

/** A fresh version of a key of this type; `keySize` (bytes) applies to HMAC keys only. */
export async function generateVersion(spec: KeyTypeSpec, keySize: number): Promise<StoredVersion> {
  if (isAsymmetric(spec)) return versionFromPair(await generatePair(spec));
  return symmetricVersion(randomBytes(spec.family === 'hmac' ? keySize : (spec.keyBytes ?? 32)));
}

/**
 * A version from imported key material: raw bytes for AEAD and HMAC keys, PKCS#8 DER for asymmetric
 * keys. Material that does not fit the type is refused (never echoed).
 */
export function importedVersion(spec: KeyTypeSpec, material: Buffer): StoredVersion {
  if (spec.family === 'hmac') {
    if (material.length < HMAC_KEY_SIZE.min || material.length > HMAC_KEY_SIZE.max) {
      throw ServiceError.badRequest(`imported HMAC key must be ${HMAC_KEY_SIZE.min} to ${HMAC_KEY_SIZE.max} bytes`);
    }
    return symmetricVersion(material);
  }
  if (spec.family === 'aead') {
    if (material.length !== spec.keyBytes) {
      throw ServiceError.badRequest(`imported key material must be ${spec.keyBytes} bytes for type ${spec.name}`);
    }
    return symmetricVersion(material);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: material, format: 'der', type: 'pkcs8' });
  } catch {
    throw ServiceError.badRequest('imported key material is not a PKCS#8 private key');
  }
  checkMatchesType(spec, privateKey);
  return versionFromPair({ privateKey, publicKey: createPublicKey(privateKey) });
}

/** A version holding only a public key (PEM): verification and encryption only. */
export function publicKeyVersion(spec: KeyTypeSpec, pem: string): StoredVersion {
  if (!isAsymmetric(spec)) throw ServiceError.badRequest(`a public key cannot be imported for key type ${spec.name}`);
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: pem, format: 'pem' });
  } catch {
    throw ServiceError.badRequest('public_key is not a PEM public key');
  }
  checkMatchesType(spec, publicKey);
  return versionFromPair({ publicKey });
}

function checkMatchesType(spec: KeyTypeSpec, key: KeyObject): void {
  const details = key.asymmetricKeyDetails ?? {};
  const matches =
    (spec.family === 'ed25519' && key.asymmetricKeyType === 'ed25519') ||
    (spec.family === 'ecdsa' && key.asymmetricKeyType === 'ec' && details.namedCurve === OPENSSL_CURVES[spec.curve ?? '']) ||
    (spec.family === 'rsa' && key.asymmetricKeyType === 'rsa' && details.modulusLength === spec.modulusBits);
  if (!matches) throw ServiceError.badRequest(`key material does not match key type ${spec.name}`);
}

/** HKDF-SHA256 of a key for a context (no salt, context as info), as Vault's `hkdf_sha256` KDF. */
export function deriveBytes(key: Buffer, context: Buffer, length: number): Buffer {
  return Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), context, length));
}

/** The raw 32-byte seed of an Ed25519 private key. */
export function ed25519Seed(privateKey: KeyObject): Buffer {
  return Buffer.from(privateKey.export({ format: 'jwk' }).d ?? '', 'base64url');
}

export function ed25519FromSeed(seed: Buffer): KeyObject {
  return createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}
