import type { MountInfo } from '@svc/framework';

/** The system's lease TTL when neither the role nor the mount sets one (Document 1: 768h). */
export const SYSTEM_LEASE_TTL = 768 * 3600;

export interface LeaseLimits {
  /** Seconds the lease lasts from issue. */
  ttl: number;
  /** Seconds after issue beyond which it cannot be renewed. */
  maxTtl: number;
}

/**
 * The role's TTLs, falling back to the mount's and then the system's; the role may shorten the
 * mount's maximum but never lengthen it.
 */
export function leaseLimits(role: { default_ttl: number; max_ttl: number }, mount: Pick<MountInfo, 'config'>): LeaseLimits {
  const mountMax = mount.config.max_lease_ttl || SYSTEM_LEASE_TTL;
  const mountDefault = Math.min(mount.config.default_lease_ttl || SYSTEM_LEASE_TTL, mountMax);
  const maxTtl = role.max_ttl > 0 ? Math.min(role.max_ttl, mountMax) : mountMax;
  const ttl = Math.min(role.default_ttl > 0 ? role.default_ttl : mountDefault, maxTtl);
  return { ttl, maxTtl };
}
