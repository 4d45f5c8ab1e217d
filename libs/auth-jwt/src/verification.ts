/**
 * A token's signature and standard claims: the signature with jose, the claims here, since each
 * time claim has its own leeway (jwtVerify takes one tolerance for all).
 */
import { compactVerify, errors } from 'jose';
import { ServiceError } from '@svc/api-contract';
import { failureReason, unreachable } from './provider-fetch';
import type { IdentityProvider } from './providers';
import { SIGNING_ALGORITHMS, type JwtConfig, type JwtRole } from './records';

export type Claims = Record<string, unknown>;

/** Seconds added to the checks of the time claims (on top of the clock skew, for exp and nbf). */
export interface Leeways {
  clockSkew: number;
  expiration: number;
  notBefore: number;
}

export const DEFAULT_LEEWAYS: Readonly<Leeways> = Object.freeze({ clockSkew: 60, expiration: 150, notBefore: 150 });

export interface Expectations {
  algorithms: string[];
  /** The iss the token must have; '' for any. */
  issuer: string;
  /** The sub the token must have; '' for any. */
  subject: string;
  /** The aud must contain one of these (when there are any). */
  boundAudiences: string[];
  /**
   * An OIDC login's client ID, which the ID token's aud must contain. Without it (a JWT login) a
   * token with an aud is refused by a role that binds no audience: it was meant for someone else.
   */
  clientId?: string;
  leeways: Leeways;
}

/** What a role and the configuration expect of a token the role logs in with. */
export function roleExpectations(config: JwtConfig, role: JwtRole, issuer: string, clientId?: string): Expectations {
  return {
    algorithms: config.jwt_supported_algs.length ? config.jwt_supported_algs : [...SIGNING_ALGORITHMS],
    issuer,
    subject: role.bound_subject,
    boundAudiences: role.bound_audiences,
    clientId,
    // 0 stands for the default, as a client that sends every field sends it.
    leeways: {
      clockSkew: role.clock_skew_leeway || DEFAULT_LEEWAYS.clockSkew,
      expiration: role.expiration_leeway || DEFAULT_LEEWAYS.expiration,
      notBefore: role.not_before_leeway || DEFAULT_LEEWAYS.notBefore,
    },
  };
}

const refuse = (reason: string) => ServiceError.forbidden(`permission denied: ${reason}`);

/**
 * The claims of `token` once its signature verifies with the provider's keys and its standard
 * claims are what `expected` says: 400 when it is no JWT (`field` names where it came from), 403
 * when it does not verify, 502 when the keys cannot be fetched. Messages never quote the token.
 */
export async function verifiedClaims(token: string, field: string, provider: IdentityProvider, expected: Expectations, now = Date.now()): Promise<Claims> {
  let payload: Uint8Array;
  try {
    payload = await signedPayload(token, provider, expected.algorithms);
  } catch (err) {
    throw verificationFailure(err, field, provider);
  }
  const claims = parseClaims(payload);
  if (!claims) throw ServiceError.badRequest(`field "${field}": the token's payload is not a JSON object`);
  checkTimes(claims, expected.leeways, now / 1000);
  if (expected.issuer && claims.iss !== expected.issuer) throw refuse('the iss claim does not match the bound issuer');
  if (expected.subject && claims.sub !== expected.subject) throw refuse('the sub claim does not match the bound subject');
  checkAudience(audienceOf(claims), expected);
  return claims;
}

/**
 * The signed payload. Keys without a `kid` (static public keys, some JWKS) may all fit a token's
 * algorithm: each is tried in turn.
 */
async function signedPayload(token: string, provider: IdentityProvider, algorithms: string[]): Promise<Uint8Array> {
  try {
    return (await compactVerify(token, provider.keys, { algorithms })).payload;
  } catch (err) {
    if (!(err instanceof errors.JWKSMultipleMatchingKeys)) throw err;
    for await (const key of err) {
      try {
        return (await compactVerify(token, key, { algorithms })).payload;
      } catch (failure) {
        if (!(failure instanceof errors.JWSSignatureVerificationFailed)) throw failure;
      }
    }
    throw new errors.JWSSignatureVerificationFailed();
  }
}

function verificationFailure(err: unknown, field: string, provider: IdentityProvider): unknown {
  if (err instanceof errors.JWSInvalid) return ServiceError.badRequest(`field "${field}": not a signed JWT (three base64url parts)`);
  if (err instanceof errors.JWSSignatureVerificationFailed) return refuse('the token signature does not verify');
  if (err instanceof errors.JWKSNoMatchingKey) return refuse(`no key of ${provider.keySource} fits the token`);
  if (err instanceof errors.JOSEAlgNotAllowed) return refuse('the token is not signed with one of the supported algorithms (jwt_supported_algs)');
  if (err instanceof errors.JOSENotSupported) return refuse(`the token's signature cannot be checked: ${err.message}`);
  if (unreachable(err) || err instanceof errors.JOSEError) return ServiceError.badGateway(`error fetching the signing keys from "${provider.keySource}": ${failureReason(err)}`);
  return err;
}

function parseClaims(payload: Uint8Array): Claims | undefined {
  try {
    const claims: unknown = JSON.parse(new TextDecoder().decode(payload));
    return typeof claims === 'object' && claims !== null && !Array.isArray(claims) ? (claims as Claims) : undefined;
  } catch {
    return undefined;
  }
}

function checkTimes(claims: Claims, leeways: Leeways, seconds: number): void {
  const times: Partial<Record<'exp' | 'nbf' | 'iat', number>> = {};
  for (const name of ['exp', 'nbf', 'iat'] as const) {
    const value = claims[name];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value)) throw refuse(`the ${name} claim is not a number`);
    times[name] = value;
  }
  const { exp, nbf, iat } = times;
  if (exp === undefined && nbf === undefined && iat === undefined) throw refuse('the token has none of the exp, nbf and iat claims');
  if (exp !== undefined && seconds > exp + leeways.expiration + leeways.clockSkew) throw refuse('the token has expired');
  if (nbf !== undefined && seconds + leeways.notBefore + leeways.clockSkew < nbf) throw refuse('the token is not valid yet (nbf)');
  if (iat !== undefined && seconds + leeways.clockSkew < iat) throw refuse('the token was issued in the future (iat)');
}

/** The aud claim as a list: one audience may be a plain string. */
function audienceOf(claims: Claims): string[] {
  const { aud } = claims;
  if (aud === undefined) return [];
  if (typeof aud === 'string') return [aud];
  if (Array.isArray(aud) && aud.every((entry) => typeof entry === 'string')) return aud;
  throw refuse('the aud claim is neither a string nor a list of strings');
}

function checkAudience(audience: string[], expected: Expectations): void {
  if (expected.clientId !== undefined) {
    if (!audience.includes(expected.clientId)) throw refuse('the aud claim does not contain the client ID');
  } else if (expected.boundAudiences.length === 0 && audience.length > 0) {
    throw refuse('the token has an aud claim but the role binds no audience');
  }
  if (expected.boundAudiences.length > 0 && !expected.boundAudiences.some((bound) => audience.includes(bound))) {
    throw refuse('the aud claim does not match any bound audience');
  }
}
