import { ServiceError } from '@svc/api-contract';

/** What a key type is made of and which operations it allows (Document 2, key types). */
export type KeyFamily = 'aead' | 'ed25519' | 'ecdsa' | 'rsa' | 'hmac';

export interface KeyTypeSpec {
  name: string;
  family: KeyFamily;
  /** AEAD: the OpenSSL cipher and its key length in bytes. */
  cipher?: 'aes-128-gcm' | 'aes-256-gcm' | 'chacha20-poly1305';
  keyBytes?: number;
  /** ECDSA: the named curve (NIST name as OpenSSL and WebCrypto spell it). */
  curve?: 'P-256' | 'P-384' | 'P-521';
  /** RSA: modulus size in bits. */
  modulusBits?: number;
  supportsEncryption: boolean;
  supportsDecryption: boolean;
  supportsDerivation: boolean;
  supportsSigning: boolean;
}

const aead = (name: string, cipher: KeyTypeSpec['cipher'], keyBytes: number): KeyTypeSpec => ({
  name,
  family: 'aead',
  cipher,
  keyBytes,
  supportsEncryption: true,
  supportsDecryption: true,
  supportsDerivation: true,
  supportsSigning: false,
});

const ecdsa = (name: string, curve: KeyTypeSpec['curve']): KeyTypeSpec => ({
  name,
  family: 'ecdsa',
  curve,
  supportsEncryption: false,
  supportsDecryption: false,
  supportsDerivation: false,
  supportsSigning: true,
});

const rsa = (name: string, modulusBits: number): KeyTypeSpec => ({
  name,
  family: 'rsa',
  modulusBits,
  supportsEncryption: true,
  supportsDecryption: true,
  supportsDerivation: false,
  supportsSigning: true,
});

const KEY_TYPES: ReadonlyMap<string, KeyTypeSpec> = new Map(
  [
    aead('aes128-gcm96', 'aes-128-gcm', 16),
    aead('aes256-gcm96', 'aes-256-gcm', 32),
    aead('chacha20-poly1305', 'chacha20-poly1305', 32),
    {
      name: 'ed25519',
      family: 'ed25519',
      supportsEncryption: false,
      supportsDecryption: false,
      supportsDerivation: true,
      supportsSigning: true,
    } satisfies KeyTypeSpec,
    ecdsa('ecdsa-p256', 'P-256'),
    ecdsa('ecdsa-p384', 'P-384'),
    ecdsa('ecdsa-p521', 'P-521'),
    rsa('rsa-2048', 2048),
    rsa('rsa-3072', 3072),
    rsa('rsa-4096', 4096),
    {
      name: 'hmac',
      family: 'hmac',
      supportsEncryption: false,
      supportsDecryption: false,
      supportsDerivation: false,
      supportsSigning: false,
    } satisfies KeyTypeSpec,
  ].map((spec) => [spec.name, spec]),
);

export const DEFAULT_KEY_TYPE = 'aes256-gcm96';
export const MANAGED_KEY_TYPE = 'managed_key';
/** Every value `type` accepts, including the enterprise-only type that is refused with a clear message. */
export const KEY_TYPE_NAMES: readonly string[] = [...KEY_TYPES.keys(), MANAGED_KEY_TYPE];

/** HMAC key sizes in bytes (Document 2, limits). */
export const HMAC_KEY_SIZE = { min: 32, max: 512, default: 32 } as const;

export function keyTypeSpec(name: string): KeyTypeSpec {
  const spec = KEY_TYPES.get(name);
  if (spec) return spec;
  if (name === MANAGED_KEY_TYPE) {
    throw ServiceError.badRequest('managed keys are an enterprise feature; this service has no managed key support');
  }
  throw ServiceError.badRequest(`unknown key type "${name}"`);
}

export function isAsymmetric(spec: KeyTypeSpec): boolean {
  return spec.family === 'ed25519' || spec.family === 'ecdsa' || spec.family === 'rsa';
}
