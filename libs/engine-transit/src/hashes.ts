import { ServiceError } from '@svc/api-contract';

/** Hash names of the API mapped to OpenSSL digest names. */
const DIGESTS: Record<string, string> = {
  sha1: 'sha1',
  'sha2-224': 'sha224',
  'sha2-256': 'sha256',
  'sha2-384': 'sha384',
  'sha2-512': 'sha512',
  'sha3-224': 'sha3-224',
  'sha3-256': 'sha3-256',
  'sha3-384': 'sha3-384',
  'sha3-512': 'sha3-512',
};

export const HASH_ALGORITHMS: readonly string[] = Object.keys(DIGESTS);
export const DEFAULT_HASH_ALGORITHM = 'sha2-256';

export function opensslDigest(algorithm: string): string {
  const digest = Object.hasOwn(DIGESTS, algorithm) ? DIGESTS[algorithm] : undefined;
  if (!digest) throw ServiceError.badRequest(`unsupported hash algorithm "${algorithm}"`);
  return digest;
}

/**
 * DER prefixes of the PKCS#1 v1.5 DigestInfo structure (RFC 8017 section 9.2, NIST hash OIDs): a
 * prehashed digest is signed as prefix ‖ digest.
 */
const DIGEST_INFO_PREFIXES: Record<string, string> = {
  sha1: '3021300906052b0e03021a05000414',
  sha224: '302d300d06096086480165030402040500041c',
  sha256: '3031300d060960864801650304020105000420',
  sha384: '3041300d060960864801650304020205000430',
  sha512: '3051300d060960864801650304020305000440',
  'sha3-224': '302d300d06096086480165030402070500041c',
  'sha3-256': '3031300d060960864801650304020805000420',
  'sha3-384': '3041300d060960864801650304020905000430',
  'sha3-512': '3051300d060960864801650304020a05000440',
};

/** A prehashed input as given, once checked to have the length of the hash's digest. */
export function checkDigest(digest: string, hashed: Buffer): Buffer {
  // The DigestInfo prefix ends with the digest length (DER OCTET STRING length).
  const length = parseInt(DIGEST_INFO_PREFIXES[digest].slice(-2), 16);
  if (hashed.length !== length) {
    throw ServiceError.badRequest(`prehashed input must be a ${length}-byte digest for this hash algorithm`);
  }
  return hashed;
}

/** DigestInfo for a prehashed digest; the digest must have the hash's length. */
export function digestInfo(digest: string, hashed: Buffer): Buffer {
  return Buffer.concat([Buffer.from(DIGEST_INFO_PREFIXES[digest], 'hex'), checkDigest(digest, hashed)]);
}
