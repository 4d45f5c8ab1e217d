import { ServiceError } from '@svc/api-contract';
import { combine, split } from 'shamir-secret-sharing';

export const UNSEAL_KEY_BYTES = 32;
export const MAX_SHARES = 255;

/**
 * Checks `secret_shares` / `secret_threshold` the way Vault does: a single share is the key
 * itself (threshold 1); several shares need a threshold of at least 2, or any one share alone
 * would unseal and the split would add nothing.
 */
export function validateShareConfig(shares: number, threshold: number, fieldPrefix: 'secret' | 'recovery' = 'secret'): void {
  const [sharesField, thresholdField] = [`${fieldPrefix}_shares`, `${fieldPrefix}_threshold`];
  if (!Number.isInteger(shares) || shares < 1 || shares > MAX_SHARES) {
    throw ServiceError.badRequest(`${sharesField} must be an integer between 1 and ${MAX_SHARES}`);
  }
  if (!Number.isInteger(threshold) || threshold < 1 || threshold > shares) {
    throw ServiceError.badRequest(`${thresholdField} must be an integer between 1 and ${sharesField} (${shares})`);
  }
  if (shares > 1 && threshold === 1) {
    throw ServiceError.badRequest(`${thresholdField} must be at least 2 when ${sharesField} is greater than 1`);
  }
}

/** Byte length of one share: the key itself for a single share, else the key plus the x-coordinate byte. */
export function shareLength(shares: number): number {
  return shares === 1 ? UNSEAL_KEY_BYTES : UNSEAL_KEY_BYTES + 1;
}

export async function splitKey(key: Uint8Array, shares: number, threshold: number): Promise<Buffer[]> {
  validateShareConfig(shares, threshold);
  if (key.length !== UNSEAL_KEY_BYTES) throw new Error(`unseal key must be ${UNSEAL_KEY_BYTES} bytes`);
  if (shares === 1) return [Buffer.from(key)];
  return (await split(plainBytes(key), shares, threshold)).map((share) => Buffer.from(share));
}

/** Reconstructs the key. Wrong shares yield a wrong key rather than an error: callers verify it
 * by decrypting something with it. */
export async function combineShares(shares: Uint8Array[]): Promise<Buffer> {
  if (shares.length === 1) return Buffer.from(shares[0]);
  return Buffer.from(await combine(shares.map(plainBytes)));
}

/** The library checks `instanceof Uint8Array`, which a Buffer created in another realm (a test
 * sandbox, a worker) fails; a copy made here always passes. */
function plainBytes(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes);
}
