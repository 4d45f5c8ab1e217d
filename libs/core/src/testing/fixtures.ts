/** Fixtures the core's unit specs share. */
import type { GenerateRootStatus } from '@svc/seal';
import type { LeaseEntry } from '../leases/lease';
import { nowSeconds, SERVICE_TOKEN_LENGTH, type TokenEntry } from '../tokens/token-store';

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

/** The status of a root token generation (or a DR operation token's) not started, with a threshold of 2. */
export const notStartedGeneration: GenerateRootStatus = {
  started: false,
  nonce: '',
  progress: 0,
  required: 2,
  encoded_token: '',
  encoded_root_token: '',
  pgp_fingerprint: '',
  otp: '',
  otp_length: SERVICE_TOKEN_LENGTH,
  complete: false,
};
