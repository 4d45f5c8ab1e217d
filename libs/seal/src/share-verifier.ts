import { createHash, timingSafeEqual } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import { aeadDecrypt } from './aead';
import type { ShareAuthority } from './rekey';
import { combineShares } from './shamir';
import { SEAL_STORAGE_KEYS } from './storage-keys';

/**
 * What checks a combined set of a seal's shares without being able to open anything by itself,
 * so another cluster (a DR secondary) can verify its primary's shares:
 * - `unseal` (Shamir): `check` is the root key encrypted under the unseal key (AES-256-GCM, the
 *   seal's own stored entry): only the unseal key decrypts it, which proves the shares.
 * - `recovery` (auto-unseal): `check` is a SHA-256 digest of the recovery key (32 random bytes,
 *   so the digest gives nothing away).
 */
export interface ShareVerifier {
  kind: 'unseal' | 'recovery';
  shares: number;
  threshold: number;
  /** base64 */
  check: string;
}

const RECOVERY_DIGEST_LABEL = 'svc recovery key verifier v1';

export function recoveryKeyDigest(recoveryKey: Buffer): Buffer {
  return createHash('sha256').update(RECOVERY_DIGEST_LABEL).update(recoveryKey).digest();
}

/** The verifier's shape, checked: it came from another server. */
export function checkShareVerifier(value: unknown): ShareVerifier {
  const verifier = value as Partial<ShareVerifier> | null;
  const counts = (n: unknown) => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 255;
  if (!verifier || (verifier.kind !== 'unseal' && verifier.kind !== 'recovery') || !counts(verifier.shares) || !counts(verifier.threshold) || typeof verifier.check !== 'string') {
    throw new Error('the share verifier is malformed');
  }
  return { kind: verifier.kind, shares: verifier.shares!, threshold: verifier.threshold!, check: verifier.check };
}

/**
 * Shares checked against a verifier (read when needed, so a newer one from the primary applies at
 * once). `whose` names the keys in refusals ("the primary's").
 */
export function verifierAuthority(read: () => Promise<ShareVerifier>, whose: string): ShareAuthority {
  return {
    split: async () => {
      const { shares, threshold } = await read();
      return { shares, threshold };
    },
    verify: async (shares) => {
      const verifier = await read();
      const combined = await combineShares(shares).catch(() => undefined);
      try {
        if (!combined || !matches(verifier, combined)) {
          throw ServiceError.badRequest(`the submitted key shares do not form ${whose} ${verifier.kind === 'unseal' ? 'unseal' : 'recovery'} key; progress has been reset`);
        }
      } finally {
        combined?.fill(0);
      }
    },
  };
}

function matches(verifier: ShareVerifier, combined: Buffer): boolean {
  const check = Buffer.from(verifier.check, 'base64');
  if (verifier.kind === 'recovery') {
    const digest = recoveryKeyDigest(combined);
    return digest.length === check.length && timingSafeEqual(digest, check);
  }
  try {
    aeadDecrypt(combined, check, SEAL_STORAGE_KEYS.rootKey).fill(0);
    return true;
  } catch {
    return false;
  }
}
