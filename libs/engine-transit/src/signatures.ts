import {
  constants,
  createHmac,
  sign as cryptoSign,
  verify as cryptoVerify,
  privateEncrypt,
  publicDecrypt,
  timingSafeEqual,
  type KeyObject,
} from 'node:crypto';
import { p256, p384, p521 } from '@noble/curves/nist';
import { ServiceError } from '@svc/api-contract';
import { decodeBase64, formatVersioned, parseVersioned } from './encoding';
import { checkDigest, digestInfo, opensslDigest } from './hashes';
import type { TransitKey, VersionMaterial } from './transit-key';

export const SIGNATURE_ALGORITHMS = ['pss', 'pkcs1v15'] as const;
export const MARSHALING_ALGORITHMS = ['asn1', 'jws'] as const;
/** `hash_algorithm` value for RSA PKCS#1 v1.5 over prehashed input without a DigestInfo. */
export const NO_HASH = 'none';
/** Node's ECDSA signs only what it hashes itself; prehashed digests are signed by @noble/curves. */
const CURVES = { 'P-256': p256, 'P-384': p384, 'P-521': p521 };

export interface SignatureOptions {
  hashAlgorithm: string;
  prehashed: boolean;
  signatureAlgorithm: string;
  marshaling: string;
  /** `auto`, `hash` or a number of bytes (RSA-PSS). */
  saltLength: string;
  context?: Buffer;
}

export function sign(key: TransitKey, version: number, input: Buffer, options: SignatureOptions): string {
  checkSigning(key);
  const material = key.material(version);
  const privateKey = key.signingKey(material, options.context);
  const signature = signBytes(key, privateKey, input, options);
  return formatVersioned(version, encodeSignature(signature, options.marshaling));
}

export function verify(key: TransitKey, signature: string, input: Buffer, options: SignatureOptions): boolean {
  checkSigning(key);
  const { version, body } = parseVersioned(signature, 'signature');
  key.checkReadVersion(version);
  const material = key.material(version);
  const publicKey = key.verifyingKey(material, options.context);
  return verifyBytes(key, publicKey, input, decodeSignature(body, options.marshaling), options);
}

function checkSigning(key: TransitKey): void {
  if (!key.spec.supportsSigning) throw ServiceError.badRequest(`key type ${key.spec.name} does not support signing`);
}

interface SignParameters {
  /** OpenSSL digest, null for Ed25519 (which hashes internally), NO_HASH for raw prehashed input. */
  digest: string | null;
  keyOptions: { padding?: number; saltLength?: number; dsaEncoding?: 'der' | 'ieee-p1363' };
}

/** Node's one-shot sign/verify parameters for the key type and request options. */
function signParameters(key: TransitKey, options: SignatureOptions, forVerify: boolean): SignParameters {
  const family = key.spec.family;
  const rsaPkcs1 = family === 'rsa' && options.signatureAlgorithm === 'pkcs1v15';
  if (options.hashAlgorithm === NO_HASH && !(rsaPkcs1 && options.prehashed)) {
    throw ServiceError.badRequest('hash_algorithm "none" is only valid for prehashed input with RSA PKCS#1 v1.5 signatures');
  }
  if (options.prehashed && family !== 'ecdsa' && !rsaPkcs1) {
    throw ServiceError.badRequest(
      'prehashed input is supported only for ECDSA keys and RSA keys with signature_algorithm pkcs1v15; send the input unhashed instead',
    );
  }
  if (family === 'ed25519') return { digest: null, keyOptions: {} };
  const digest = options.hashAlgorithm === NO_HASH ? NO_HASH : opensslDigest(options.hashAlgorithm);
  if (family === 'ecdsa') return { digest, keyOptions: { dsaEncoding: options.marshaling === 'jws' ? 'ieee-p1363' : 'der' } };
  if (rsaPkcs1) return { digest, keyOptions: { padding: constants.RSA_PKCS1_PADDING } };
  return {
    digest,
    keyOptions: { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: pssSaltLength(options.saltLength, forVerify) },
  };
}

function pssSaltLength(saltLength: string, forVerify: boolean): number {
  if (saltLength === 'auto') return forVerify ? constants.RSA_PSS_SALTLEN_AUTO : constants.RSA_PSS_SALTLEN_MAX_SIGN;
  if (saltLength === 'hash') return constants.RSA_PSS_SALTLEN_DIGEST;
  if (/^\d+$/.test(saltLength)) return Number(saltLength);
  throw ServiceError.badRequest('salt_length must be "auto", "hash" or a number of bytes');
}

/** Prehashed PKCS#1 v1.5: the DigestInfo (or, for "none", the input itself) is what gets padded. */
function prehashedBlock(digest: string, input: Buffer): Buffer {
  return digest === NO_HASH ? input : digestInfo(digest, input);
}

/** The curve of an ECDSA key and the signature format of the marshaling: `jws` is r ‖ s, `asn1` DER. */
function ecdsaScheme(key: TransitKey, marshaling: string) {
  const format: 'compact' | 'der' = marshaling === 'jws' ? 'compact' : 'der';
  return { curve: CURVES[key.spec.curve ?? 'P-256'], format };
}

const jwkBytes = (value: string | undefined): Buffer => Buffer.from(value ?? '', 'base64url');

/** Signs a prehashed digest: ECDSA by @noble/curves with the key's scalar, RSA PKCS#1 v1.5 by raw padding. */
function signDigest(key: TransitKey, privateKey: KeyObject, digest: string, input: Buffer, marshaling: string): Buffer {
  if (key.spec.family !== 'ecdsa') {
    return privateEncrypt({ key: privateKey, padding: constants.RSA_PKCS1_PADDING }, prehashedBlock(digest, input));
  }
  const { curve, format } = ecdsaScheme(key, marshaling);
  const scalar = jwkBytes(privateKey.export({ format: 'jwk' }).d);
  return Buffer.from(curve.sign(checkDigest(digest, input), scalar, { prehash: false, lowS: false }).toBytes(format));
}

function verifyDigest(
  key: TransitKey,
  publicKey: KeyObject,
  digest: string,
  input: Buffer,
  signature: Buffer,
  marshaling: string,
): boolean {
  if (key.spec.family !== 'ecdsa') {
    const expected = prehashedBlock(digest, input);
    const recovered = publicDecrypt({ key: publicKey, padding: constants.RSA_PKCS1_PADDING }, signature);
    return recovered.length === expected.length && timingSafeEqual(recovered, expected);
  }
  const { curve, format } = ecdsaScheme(key, marshaling);
  const { x, y } = publicKey.export({ format: 'jwk' });
  const point = Buffer.concat([Buffer.of(4), jwkBytes(x), jwkBytes(y)]); // uncompressed SEC 1 point
  return curve.verify(signature, checkDigest(digest, input), point, { prehash: false, lowS: false, format });
}

function signBytes(key: TransitKey, privateKey: KeyObject, input: Buffer, options: SignatureOptions): Buffer {
  const { digest, keyOptions } = signParameters(key, options, false);
  try {
    if (options.prehashed) return signDigest(key, privateKey, digest ?? NO_HASH, input, options.marshaling);
    return cryptoSign(digest, input, { key: privateKey, ...keyOptions });
  } catch (err) {
    if (err instanceof ServiceError) throw err;
    throw ServiceError.badRequest('the input cannot be signed with this key and these options');
  }
}

function verifyBytes(
  key: TransitKey,
  publicKey: KeyObject,
  input: Buffer,
  signature: Buffer,
  options: SignatureOptions,
): boolean {
  const { digest, keyOptions } = signParameters(key, options, true);
  try {
    if (options.prehashed) return verifyDigest(key, publicKey, digest ?? NO_HASH, input, signature, options.marshaling);
    return cryptoVerify(digest, input, { key: publicKey, ...keyOptions }, signature);
  } catch (err) {
    if (err instanceof ServiceError) throw err;
    return false; // a malformed signature does not verify
  }
}

/** `jws` marshaling is unpadded base64url (and raw r ‖ s for ECDSA); `asn1` is standard base64. */
function encodeSignature(signature: Buffer, marshaling: string): string {
  return signature.toString(marshaling === 'jws' ? 'base64url' : 'base64');
}

function decodeSignature(body: string, marshaling: string): Buffer {
  if (marshaling !== 'jws') return decodeBase64(body, 'signature');
  if (!/^[A-Za-z0-9_-]*$/.test(body)) throw ServiceError.badRequest('signature is not valid base64url');
  return Buffer.from(body, 'base64url');
}

/** HMAC keys are the key itself for `hmac` keys and the second, per-version HMAC key otherwise. */
function hmacKey(key: TransitKey, material: VersionMaterial): Buffer {
  return key.spec.family === 'hmac' ? (material.key as Buffer) : material.hmacKey;
}

export function hmac(key: TransitKey, version: number, input: Buffer, algorithm: string): string {
  const mac = createHmac(opensslDigest(algorithm), hmacKey(key, key.material(version))).update(input).digest('base64');
  return formatVersioned(version, mac);
}

export function verifyHmac(key: TransitKey, value: string, input: Buffer, algorithm: string): boolean {
  const { version, body } = parseVersioned(value, 'hmac');
  key.checkReadVersion(version);
  const given = decodeBase64(body, 'hmac');
  const expected = createHmac(opensslDigest(algorithm), hmacKey(key, key.material(version))).update(input).digest();
  return given.length === expected.length && timingSafeEqual(given, expected);
}
