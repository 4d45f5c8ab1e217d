import { ServiceError } from '@svc/api-contract';
import { openSealed, sealFor, type SealedKeyring } from '@svc/seal';
import type { KeyObject } from 'node:crypto';
import type { ClusterCa } from './pki';
import type { ActivationBundle, ReplicationMode } from './types';

const BUNDLE_PURPOSE = 'svc replication activation v1';

/** Claims of the JWT form of an activation (wrapping) token, as Vault's: `addr` is the primary's API address. */
export interface WrappingClaims {
  addr: string;
  accessor: string;
  /** The wrapping token itself. */
  jti: string;
  type: 'wrapping';
  iat: number;
  nbf: number;
  exp: number;
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

export function isJwtForm(token: string): boolean {
  // Every request's token is asked: one with fewer than two dots is answered without the pattern.
  const firstDot = token.indexOf('.');
  return firstDot >= 0 && token.indexOf('.', firstDot + 1) >= 0 && JWT_SHAPE.test(token);
}

/** The wrapping token in JWT form, signed (ES256) with the mode's cluster CA key. */
export function signWrappingToken(ca: ClusterCa, mode: ReplicationMode, claims: WrappingClaims): string {
  const header = Buffer.from(JSON.stringify({ alg: 'ES256', typ: 'JWT', kid: mode })).toString('base64url');
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${header}.${payload}.${ca.signJose(`${header}.${payload}`)}`;
}

/** The claims, unverified: what a secondary, which holds no key of the primary yet, reads to find it. */
export function readWrappingClaims(token: string): WrappingClaims {
  if (!isJwtForm(token)) throw ServiceError.badRequest('token is not an activation token');
  const [header, payload] = token.split('.');
  let claims: Partial<WrappingClaims>;
  let kid: unknown;
  try {
    kid = (JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { kid?: unknown }).kid;
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Partial<WrappingClaims>;
  } catch {
    throw ServiceError.badRequest('token is not an activation token');
  }
  if ((kid !== 'performance' && kid !== 'dr') || claims.type !== 'wrapping' || typeof claims.jti !== 'string' || typeof claims.addr !== 'string' || typeof claims.exp !== 'number') {
    throw ServiceError.badRequest('token is not an activation token');
  }
  return claims as WrappingClaims;
}

/** The mode a JWT-form token names (its `kid`), for the primary to pick the key that verifies it. */
export function wrappingTokenMode(token: string): ReplicationMode | undefined {
  try {
    const kid = (JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString('utf8')) as { kid?: unknown }).kid;
    return kid === 'performance' || kid === 'dr' ? kid : undefined;
  } catch {
    return undefined;
  }
}

/** The wrapping token inside a JWT-form token, if its signature holds and it has not expired. */
export function verifyWrappingToken(ca: ClusterCa, token: string, nowSeconds: number): string | undefined {
  if (!isJwtForm(token)) return undefined;
  const [header, payload, signature] = token.split('.');
  if (!ca.verifyJose(`${header}.${payload}`, signature)) return undefined;
  const claims = readWrappingClaims(token);
  return claims.exp > nowSeconds ? claims.jti : undefined;
}

/** The activation bundle encrypted to a secondary's public key (`secondary_public_key`): the token itself. */
export function encryptBundle(publicKey: string, bundle: ActivationBundle): string {
  let sealed: SealedKeyring;
  try {
    sealed = sealFor(publicKey, Buffer.from(JSON.stringify(bundle), 'utf8'), BUNDLE_PURPOSE);
  } catch {
    throw ServiceError.badRequest('secondary_public_key is not a public key made by secondary/generate-public-key');
  }
  return Buffer.from(JSON.stringify(sealed)).toString('base64url');
}

export function decryptBundle(privateKey: KeyObject, token: string): ActivationBundle {
  let sealed: SealedKeyring;
  try {
    sealed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as SealedKeyring;
    if (typeof sealed.senderPublicKey !== 'string' || typeof sealed.ciphertext !== 'string') throw new Error('shape');
  } catch {
    throw ServiceError.badRequest('token is not an activation token');
  }
  try {
    return checkBundle(JSON.parse(openSealed(privateKey, sealed, BUNDLE_PURPOSE, 'activation token').toString('utf8')));
  } catch (err) {
    if (err instanceof ServiceError) throw err;
    throw ServiceError.badRequest('the activation token was encrypted to another public key than this cluster\'s (secondary/generate-public-key)');
  }
}

/** The bundle's shape, checked: it came from another server. */
export function checkBundle(value: unknown): ActivationBundle {
  const bundle = value as Partial<ActivationBundle> | null;
  const strings: (keyof ActivationBundle)[] = ['mode', 'cluster_id', 'secondary_id', 'primary_api_addr', 'ca_cert', 'client_cert', 'client_key'];
  if (!bundle || typeof bundle !== 'object' || strings.some((field) => typeof bundle[field] !== 'string') || !Array.isArray(bundle.primary_cluster_addrs)) {
    throw ServiceError.badRequest('the unwrapped token is not a replication activation');
  }
  return bundle as ActivationBundle;
}
