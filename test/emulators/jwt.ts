/**
 * RS256 JSON web tokens for emulators: the directory's access tokens (signed by the emulator)
 * and service-account assertions (signed by the client with its key). Only what providers check.
 */
import { createSign, createVerify, type KeyObject } from 'node:crypto';

export interface DecodedJwt {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
}

const encode = (part: unknown) => Buffer.from(JSON.stringify(part)).toString('base64url');

export function signJwt(payload: Record<string, unknown>, key: KeyObject, header: Record<string, unknown> = {}): string {
  const signed = `${encode({ alg: 'RS256', typ: 'JWT', ...header })}.${encode(payload)}`;
  return `${signed}.${createSign('RSA-SHA256').update(signed).sign(key).toString('base64url')}`;
}

/** The token's parts, without checking anything; undefined when it is not a JWT. */
export function decodeJwt(token: string): DecodedJwt | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    return { header: JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8')), payload: JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) };
  } catch {
    return undefined;
  }
}

/**
 * The token's claims when its RS256 signature verifies with `key` and it is within its lifetime
 * (a minute of clock skew allowed); otherwise what is wrong with it.
 */
export function verifyJwt(token: string, key: KeyObject, now = Date.now()): { claims: Record<string, unknown> } | { problem: string } {
  const decoded = decodeJwt(token);
  if (!decoded) return { problem: 'not a JWT' };
  if (decoded.header.alg !== 'RS256') return { problem: `algorithm ${String(decoded.header.alg)} is not RS256` };
  const [header, payload, signature] = token.split('.');
  if (!createVerify('RSA-SHA256').update(`${header}.${payload}`).verify(key, Buffer.from(signature, 'base64url'))) return { problem: 'signature does not verify' };
  const seconds = now / 1000;
  const { exp, iat } = decoded.payload as { exp?: number; iat?: number };
  if (typeof exp !== 'number' || exp < seconds - 60) return { problem: 'token expired' };
  if (typeof iat === 'number' && iat > seconds + 60) return { problem: 'token issued in the future' };
  return { claims: decoded.payload };
}
