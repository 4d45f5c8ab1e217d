/** A lease as stored: what to revoke, when, and how revocation has gone so far. */
export interface LeaseEntry {
  /** Relative to its namespace, e.g. "database/creds/readonly/Jk3...". */
  leaseId: string;
  namespace: string;
  kind: 'secret' | 'token';
  /** Mount (by accessor: stable across remounts) and the secret type the engine declared. */
  mountAccessor: string;
  secretType: string;
  internalData: Record<string, unknown>;
  /** Accessor of the token that created the lease ('' when none), or of the token itself. */
  tokenAccessor: string;
  /** Unix seconds. */
  issueTime: number;
  lastRenewalTime: number;
  expireTime: number;
  /** Latest allowed expiry (issue time + max TTL); 0 = unbounded. */
  maxExpireTime: number;
  renewable: boolean;
  revokeAttempts: number;
  lastRevokeError?: string;
  /** Unix seconds of the next revocation attempt after a failure. */
  retryAt?: number;
}

export function leaseTtl(entry: LeaseEntry, now: number): number {
  return Math.max(0, entry.expireTime - now);
}

/** Clamps a requested TTL: 0 means the default; never past the maximum (mount, then system). */
export function clampTtl(requested: number, defaults: { defaultTtl: number; maxTtl: number }): number {
  const ttl = requested > 0 ? requested : defaults.defaultTtl;
  return defaults.maxTtl > 0 ? Math.min(ttl, defaults.maxTtl) : ttl;
}
