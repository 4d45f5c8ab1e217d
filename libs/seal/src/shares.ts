import { randomUUID, timingSafeEqual } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import type { KeySplit } from './key-split';
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

/** How far the unseal attempt is, as sys/seal-status reports it. */
export interface UnsealAttemptState {
  progress: number;
  nonce: string;
}

/**
 * The shares of one unseal attempt until a threshold of them is given: kept by this process
 * (`UnsealProgress`), or, for the gateway workers of one server, by its primary
 * (`PrimaryUnsealProgress`), since a client cannot choose which worker takes each share.
 */
export interface UnsealShares {
  state(): Promise<UnsealAttemptState>;
  /**
   * Takes one share (hex or base64) of a key split as `split`. The threshold-th hands back every
   * share given, progress starting over; the caller zeroes them.
   */
  add(key: string, split: KeySplit): Promise<Buffer[] | undefined>;
  /** Forgets (and zeroes) the shares given so far. */
  drop(): Promise<void>;
}

/**
 * The shares of one unseal attempt, kept in this process's memory (each server unseals on its own,
 * as each Vault node does).
 */
export class UnsealProgress implements UnsealShares {
  private attempt?: { nonce: string; shares: Buffer[] };

  async state(): Promise<UnsealAttemptState> {
    return { progress: this.attempt?.shares.length ?? 0, nonce: this.attempt?.nonce ?? '' };
  }

  async add(key: string, split: KeySplit): Promise<Buffer[] | undefined> {
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

  async drop(): Promise<void> {
    this.attempt?.shares.forEach((share) => share.fill(0));
    this.attempt = undefined;
  }
}
