import { randomUUID, timingSafeEqual } from 'node:crypto';
import { ServiceError } from '@svc/http';
import type { KeySplit } from './rekey';
import { shareLength } from './shamir';
import { encryptForPgpKey, fingerprint } from './pgp';

/** Shares as handed to operators: hex and base64 of each share, or of its PGP encryption. */
export interface HandedOutShares {
  keys: string[];
  keys_base64: string[];
}

/**
 * Vault encrypts the share's hex text, so `base64 -d | gpg -d` prints what the user types into
 * unseal. Without PGP keys the shares are handed out as they are.
 */
export async function handOutShares(shares: Buffer[], pgpKeys: string[] | undefined): Promise<HandedOutShares> {
  const handedOut: Uint8Array[] = pgpKeys
    ? await Promise.all(shares.map((share, i) => encryptForPgpKey(pgpKeys[i], Buffer.from(share.toString('hex'), 'utf8'), `pgp_keys[${i}]`)))
    : shares;
  return {
    keys: handedOut.map((b) => Buffer.from(b).toString('hex')),
    keys_base64: handedOut.map((b) => Buffer.from(b).toString('base64')),
  };
}

/** Vault accepts a share as hex or base64 (hex tried first). */
export function parseShare(text: string, expectedBytes: number): Buffer {
  const trimmed = text.trim();
  let bytes: Buffer;
  if (/^(?:[0-9a-fA-F]{2})+$/.test(trimmed)) bytes = Buffer.from(trimmed, 'hex');
  else if (/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) && trimmed.length % 4 === 0) bytes = Buffer.from(trimmed, 'base64');
  else throw ServiceError.badRequest('key must be a hex or base64 string');
  if (bytes.length !== expectedBytes) {
    throw ServiceError.badRequest(`key must decode to ${expectedBytes} bytes, got ${bytes.length}`);
  }
  return bytes;
}

/**
 * Checks `pgp_keys` against the number of shares and returns their fingerprints, in order;
 * reading them validates every key before any secret exists.
 */
export async function pgpFingerprints(pgpKeys: string[] | undefined, shares: number, kind: 'secret' | 'recovery' = 'secret'): Promise<string[] | undefined> {
  if (!pgpKeys) return undefined;
  const field = kind === 'secret' ? 'pgp_keys' : 'recovery_pgp_keys';
  if (pgpKeys.length !== shares) {
    throw ServiceError.badRequest(`${field} must have one entry per share: got ${pgpKeys.length}, ${kind}_shares is ${shares}`);
  }
  return Promise.all(pgpKeys.map((key, i) => fingerprint(key, `${field}[${i}]`)));
}

/**
 * The shares of one unseal attempt, kept in memory (each process unseals on its own, as each Vault
 * node does) until a threshold of them is given.
 */
export class UnsealProgress {
  private attempt?: { nonce: string; shares: Buffer[] };

  get count(): number {
    return this.attempt?.shares.length ?? 0;
  }

  get nonce(): string {
    return this.attempt?.nonce ?? '';
  }

  /**
   * Takes one share (hex or base64) of a key split as `split`. The threshold-th hands back every
   * share given, progress starting over; the caller zeroes them.
   */
  add(key: string, split: KeySplit): Buffer[] | undefined {
    const share = parseShare(key, shareLength(split.shares));
    const attempt = (this.attempt ??= { nonce: randomUUID(), shares: [] });
    if (attempt.shares.some((given) => timingSafeEqual(given, share))) {
      share.fill(0);
      throw ServiceError.badRequest('this key share was already submitted in the current unseal attempt');
    }
    attempt.shares.push(share);
    if (attempt.shares.length < split.threshold) return undefined;
    this.attempt = undefined;
    return attempt.shares;
  }

  /** Forgets (and zeroes) the shares given so far. */
  drop(): void {
    this.attempt?.shares.forEach((share) => share.fill(0));
    this.attempt = undefined;
  }
}
