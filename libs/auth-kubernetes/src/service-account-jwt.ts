/**
 * Service-account JWTs: parsed, their claims checked (lifetime, issuer, audience), the account they
 * name read from them (projected and legacy forms), and their signature verified against the
 * configured public keys. Only the algorithms Kubernetes signs with are accepted.
 */
import { constants, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import type { ServiceAccount } from './roles';

export interface ParsedJwt {
  /** The token as sent. */
  text: string;
  algorithm: string;
  claims: Record<string, unknown>;
}

interface Algorithm {
  digest: string;
  keyTypes: string[];
  padding?: number;
  saltLength?: number;
  dsaEncoding?: 'ieee-p1363';
  curve?: string;
}

const rsa = (bits: number): Algorithm => ({ digest: `sha${bits}`, keyTypes: ['rsa'] });
const pss = (bits: number): Algorithm => ({ digest: `sha${bits}`, keyTypes: ['rsa', 'rsa-pss'], padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: bits / 8 });
const ecdsa = (bits: number, curve: string): Algorithm => ({ digest: `sha${bits}`, keyTypes: ['ec'], dsaEncoding: 'ieee-p1363', curve });

const ALGORITHMS: Record<string, Algorithm> = {
  RS256: rsa(256),
  RS384: rsa(384),
  RS512: rsa(512),
  PS256: pss(256),
  PS384: pss(384),
  PS512: pss(512),
  ES256: ecdsa(256, 'prime256v1'),
  ES384: ecdsa(384, 'secp384r1'),
  ES512: ecdsa(512, 'secp521r1'),
};

/** The issuer of legacy (secret-based) service-account tokens, checked when the config names none. */
export const LEGACY_ISSUER = 'kubernetes/serviceaccount';
/** Clock skew allowed between this server and the one that issued a token. */
const LEEWAY_S = 60;

const denied = (why: string) => ServiceError.forbidden(`permission denied: ${why}`);

function decodePart(part: string): unknown {
  if (!/^[A-Za-z0-9_-]+$/.test(part)) throw new Error('not base64url');
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
}

/** The token's parts; a 400 naming the field when it is not a JWT Kubernetes could have signed. */
export function parseJwt(text: string): ParsedJwt {
  const parts = text.trim().split('.');
  let header: unknown;
  let claims: unknown;
  try {
    if (parts.length !== 3 || parts[2] === '') throw new Error('not three parts');
    [header, claims] = [decodePart(parts[0]), decodePart(parts[1])];
  } catch {
    throw ServiceError.badRequest('field "jwt": not a JWT (three base64url parts, a JSON header and JSON claims)');
  }
  const algorithm = (header as { alg?: unknown } | null)?.alg;
  if (typeof algorithm !== 'string' || !Object.hasOwn(ALGORITHMS, algorithm)) {
    throw ServiceError.badRequest(`field "jwt": signing algorithm ${JSON.stringify(algorithm ?? null)} is not one Kubernetes uses (${Object.keys(ALGORITHMS).join(', ')})`);
  }
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) throw ServiceError.badRequest('field "jwt": its claims are not a JSON object');
  return { text: text.trim(), algorithm, claims: claims as Record<string, unknown> };
}

/**
 * Refuses (403) a token out of its lifetime, from another issuer than `issuer` (when given), or not
 * issued for `audience` (when not empty): what can be told without asking Kubernetes.
 */
export function checkClaims(jwt: ParsedJwt, { issuer, audience }: { issuer?: string; audience: string }, now = Date.now() / 1000): void {
  const { exp, nbf, iss, aud } = jwt.claims;
  if (typeof exp === 'number' && exp + LEEWAY_S < now) throw denied('the JWT has expired');
  if (typeof nbf === 'number' && nbf - LEEWAY_S > now) throw denied('the JWT is not valid yet');
  if (issuer !== undefined && iss !== issuer) throw denied(`the JWT's issuer is not "${issuer}"`);
  const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
  if (audience !== '' && !audiences.includes(audience)) throw denied(`the JWT was not issued for the audience "${audience}"`);
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/**
 * The service account the claims name: the `kubernetes.io` claim of projected tokens, or the
 * `kubernetes.io/serviceaccount/*` claims of legacy ones; undefined when they name none.
 */
export function claimedAccount(claims: Record<string, unknown>): ServiceAccount | undefined {
  const projected = claims['kubernetes.io'] as { namespace?: unknown; serviceaccount?: { name?: unknown; uid?: unknown } } | undefined;
  const legacy = (name: string) => text(claims[`kubernetes.io/serviceaccount/${name}`]);
  const account = projected
    ? { namespace: text(projected.namespace), name: text(projected.serviceaccount?.name), uid: text(projected.serviceaccount?.uid), secretName: '' }
    : { namespace: legacy('namespace'), name: legacy('service-account.name'), uid: legacy('service-account.uid'), secretName: legacy('secret.name') };
  return account.namespace && account.name && account.uid ? account : undefined;
}

const PEM_PUBLIC = /^-----BEGIN (PUBLIC KEY|RSA PUBLIC KEY|CERTIFICATE)-----/m;

/** The key of a PEM public key or certificate (never a private key); throws saying what it is instead. */
export function publicKeyOf(pem: string): KeyObject {
  let key: KeyObject | undefined;
  try {
    key = PEM_PUBLIC.test(pem) ? createPublicKey(pem) : undefined;
  } catch {
    key = undefined;
  }
  if (!key) throw new Error('not a PEM public key or certificate');
  if (!['rsa', 'rsa-pss', 'ec'].includes(key.asymmetricKeyType ?? '')) throw new Error(`an ${key.asymmetricKeyType} key, not an RSA or ECDSA one`);
  return key;
}

/** Whether one of the keys made the token's signature. */
export function signedByOneOf(jwt: ParsedJwt, keys: KeyObject[]): boolean {
  const algorithm = ALGORITHMS[jwt.algorithm];
  const [header, payload, signature] = jwt.text.split('.');
  const signed = Buffer.from(`${header}.${payload}`);
  return keys.some((key) => {
    if (!algorithm.keyTypes.includes(key.asymmetricKeyType ?? '')) return false;
    if (algorithm.curve && key.asymmetricKeyDetails?.namedCurve !== algorithm.curve) return false;
    try {
      const { padding, saltLength, dsaEncoding } = algorithm;
      return verify(algorithm.digest, signed, { key, padding, saltLength, dsaEncoding }, Buffer.from(signature, 'base64url'));
    } catch {
      return false;
    }
  });
}
