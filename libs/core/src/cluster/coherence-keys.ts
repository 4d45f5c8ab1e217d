import { REPLICATION_STORAGE_PREFIX } from '@svc/replication';
import { isMountTableKey } from '../mounts/mount-table';
import { NAMESPACES_KEY } from '../namespaces/registry';
import { AUDIT_TABLE_KEY } from '../audit/audit-devices';
import { LEASE_KEY_PREFIX } from '../leases/expiration';
import { TokenStore } from '../tokens/token-store';
import { POLICY_PREFIX } from '../policies/policy-store';

/**
 * Keys the replicas of a cluster announce to each other beside the storage keys they wrote: some
 * are no storage key at all, only a signal that the others must follow before a call returns.
 */

/** Not a barrier key: marks a keyring rotation for the replicas. */
export const KEYRING_CHANGED = 'core/keyring';
/** Not a storage key: tells sealed replicas that a client unsealed a peer, so they follow before the call returns. */
export const PEER_UNSEALED = 'core/unsealed';
/** Physical key counting cluster-wide seals, so a replica that missed one while cut off learns of it. */
export const SEAL_GENERATION_KEY = 'core/seal-generation';
/** Not a storage key: tells the replicas that a snapshot replaced the whole storage. */
export const STORAGE_RESTORED = 'core/snapshot-restored';
/** Barrier key of the last global plugin reload: the mounts whose backends every gateway replica drops. */
export const PLUGIN_RELOAD_KEY = 'core/plugin-reload';

/** Storage keys whose contents gateway replicas cache in memory. */
export function isCachedKey(key: string): boolean {
  const inNamespace = key.replace(/^namespaces\/[^/]+\//, '');
  return (
    key === KEYRING_CHANGED ||
    key === PEER_UNSEALED ||
    key === SEAL_GENERATION_KEY ||
    key === STORAGE_RESTORED ||
    key === NAMESPACES_KEY ||
    key === AUDIT_TABLE_KEY ||
    key === PLUGIN_RELOAD_KEY ||
    key.startsWith(TokenStore.ENTRY_PREFIX) ||
    key.startsWith(LEASE_KEY_PREFIX) ||
    isMountTableKey(inNamespace) ||
    inNamespace.startsWith(POLICY_PREFIX) ||
    key.startsWith(REPLICATION_STORAGE_PREFIX)
  );
}

/** The stored seal generation (decimal text); none stored yet is generation 0. */
export function generationOf(stored: Uint8Array | null): number {
  return stored ? Number(Buffer.from(stored).toString('utf8')) : 0;
}
