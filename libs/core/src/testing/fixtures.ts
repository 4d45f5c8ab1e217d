/** Fixtures the core's unit specs share. */
import type { LeaseEntry } from '../leases/lease';
import { nowSeconds, type TokenEntry } from '../tokens/token-store';

/** A service token of `namespace` (the root by default) with these policies, made by auth/token/create, that never expires. */
export function tokenEntry(policies: string[], namespace = '', changes: Partial<TokenEntry> = {}): TokenEntry {
  return {
    accessor: 'token-accessor',
    parent: '',
    policies,
    meta: null,
    displayName: 'token',
    numUses: 0,
    creationTime: 0,
    lastRenewalTime: 0,
    ttl: 0,
    explicitMaxTtl: 0,
    period: 0,
    renewable: false,
    type: 'service',
    namespace,
    role: '',
    path: 'auth/token/create',
    entityId: '',
    ...changes,
  };
}

/** A renewable secret lease of the root namespace, issued an hour ago, expiring in an hour. */
export function leaseEntry(leaseId: string, changes: Partial<LeaseEntry> = {}): LeaseEntry {
  const now = nowSeconds();
  return {
    leaseId,
    namespace: '',
    kind: 'secret',
    mountAccessor: 'database_1',
    secretType: 'creds',
    internalData: {},
    tokenAccessor: 'token-accessor',
    issueTime: now - 3600,
    lastRenewalTime: now - 3600,
    expireTime: now + 3600,
    maxExpireTime: 0,
    renewable: true,
    revokeAttempts: 0,
    ...changes,
  };
}
