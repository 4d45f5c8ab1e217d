import { randomUUID } from 'node:crypto';
import type { EngineReply, EngineRequest } from '@svc/engine-host';
import type { MountInfo, SecretResponse } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { MountEntry } from '../mounts/mount-table';
import type { Namespace } from '../namespaces/namespace';
import type { NamespaceRegistry } from '../namespaces/registry';
import type { TokenLimits } from '../tokens/token-manager';
import { nowSeconds } from '../tokens/token-store';
import { ExpirationManager } from './expiration';
import { clampTtl, type LeaseEntry } from './lease';

export interface LeaseLifecycleDeps {
  expiration: ExpirationManager;
  namespaces: NamespaceRegistry;
  /** Sends an operation to the engine owning a mount (Core.dispatch). */
  dispatch(message: EngineRequest): Promise<EngineReply>;
  /** TTL defaults and maximums of a mount (its tune, else the system's). */
  limits(mount: MountInfo): TokenLimits;
  /** Revokes a token tree by accessor (for token leases). */
  revokeToken(accessor: string): Promise<void>;
}

/**
 * What the core does with engine leases: register them from responses, renew and revoke them
 * through the engine that issued them. Storage and expiry scheduling are the ExpirationManager's.
 */
export class LeaseLifecycle {
  constructor(private readonly deps: LeaseLifecycleDeps) {}

  /**
   * Registers the lease of a secret an engine returned: TTL clamped by the mount tune, then the
   * system maximum; returns the lease id and the effective TTL.
   */
  async register(namespace: Namespace, mount: MountInfo, requestPath: string, secret: SecretResponse, tokenAccessor: string): Promise<{ leaseId: string; ttl: number }> {
    const limits = this.deps.limits(mount);
    const ttl = clampTtl(secret.ttl, limits);
    const now = nowSeconds();
    const maxTtl = secret.maxTtl && secret.maxTtl > 0 ? Math.min(secret.maxTtl, limits.maxTtl) : limits.maxTtl;
    const leaseId = ExpirationManager.newLeaseId(requestPath);
    await this.deps.expiration.put(namespace.record.id, {
      leaseId,
      namespace: namespace.path,
      kind: 'secret',
      mountAccessor: mount.accessor,
      secretType: secret.type,
      internalData: secret.internalData,
      tokenAccessor,
      issueTime: now,
      lastRenewalTime: now,
      expireTime: now + ttl,
      maxExpireTime: maxTtl > 0 ? now + maxTtl : 0,
      renewable: secret.renewable,
      revokeAttempts: 0,
    });
    return { leaseId, ttl };
  }

  /** sys/leases/renew: the engine renews (it may refuse), then the lease gets its new expiry. */
  async renew(namespace: Namespace, leaseId: string, increment: number): Promise<LeaseEntry> {
    const lease = await this.deps.expiration.readKey(ExpirationManager.key(namespace.record.id, leaseId));
    if (!lease) throw ServiceError.badRequest('invalid lease');
    if (!lease.renewable) throw ServiceError.badRequest('lease is not renewable');
    if (lease.kind === 'token') throw ServiceError.badRequest('token leases are renewed through auth/token/renew');
    const mount = this.mountOf(lease);
    if (!mount) throw ServiceError.badRequest("the lease's mount no longer exists");
    const reply = await this.engineCall('renew', lease, mount, { increment });
    const now = nowSeconds();
    // The engine settles the new TTL (it knows the role's current limits); the core only clamps it.
    let ttl = clampTtl(reply.response?.secret?.ttl || increment || 0, this.deps.limits(mount));
    if (lease.maxExpireTime > 0) ttl = Math.min(ttl, lease.maxExpireTime - now);
    const renewed: LeaseEntry = { ...lease, lastRenewalTime: now, expireTime: now + Math.max(0, ttl) };
    await this.deps.expiration.put(namespace.record.id, renewed);
    return renewed;
  }

  /** How a lease is revoked: an engine secret through its engine, a token lease through the tree. */
  async revoke(lease: LeaseEntry): Promise<void> {
    if (lease.kind === 'token') {
      await this.deps.revokeToken(lease.leaseId.slice(lease.leaseId.lastIndexOf('/') + 1));
      return;
    }
    const mount = this.mountOf(lease);
    if (mount) await this.engineCall('revoke', lease, mount, {}); // no mount: its data is gone with it
  }

  /** Revokes the leases a token created. */
  async revokeOfToken(accessor: string): Promise<void> {
    const { expiration } = this.deps;
    for (const key of await expiration.keysOfToken(accessor)) await expiration.revokeKey(key);
  }

  /**
   * Revokes every lease under a prefix of a namespace (whole path segments, see
   * ExpirationManager.idsUnder). Stops at the first refusal (a mount must not go while its engine
   * still holds live credentials), unless `bestEffort`, where a refused lease stays recorded for
   * retry and the others are still revoked (deleting a namespace).
   */
  async revokeUnder(namespace: Namespace, prefix: string, bestEffort = false): Promise<void> {
    await this.eachUnder(namespace, prefix, (key) => {
      const revoked = this.deps.expiration.revokeKey(key);
      return bestEffort ? revoked.catch(() => undefined) : revoked;
    });
  }

  /** revoke-force: every lease under the prefix is still revoked by its engine; a refusal is logged and the lease removed. */
  async forceRevokeUnder(namespace: Namespace, prefix: string): Promise<void> {
    await this.eachUnder(namespace, prefix, (key) => this.deps.expiration.revokeKey(key, true));
  }

  private async eachUnder(namespace: Namespace, prefix: string, revoke: (key: string) => Promise<void>): Promise<void> {
    for (const leaseId of await this.deps.expiration.idsUnder(namespace.record.id, prefix)) {
      await revoke(ExpirationManager.key(namespace.record.id, leaseId));
    }
  }

  /** The mount a lease belongs to, by accessor (stable across remounts). */
  private mountOf(lease: LeaseEntry): MountEntry | undefined {
    return this.deps.namespaces.get(lease.namespace)?.allMounts().find((m) => m.mount.accessor === lease.mountAccessor)?.mount;
  }

  /** Renew and revoke work from the lease's internal data, not from a path. */
  private async engineCall(kind: 'renew' | 'revoke', lease: LeaseEntry, mount: MountEntry, data: Record<string, unknown>): Promise<Extract<EngineReply, { ok: true }>> {
    const reply = await this.deps.dispatch({
      kind,
      requestId: randomUUID(),
      mount,
      path: '',
      operation: kind === 'renew' ? 'update' : 'delete',
      data,
      capabilities: ['root'],
      secretType: lease.secretType,
      internalData: lease.internalData,
    });
    if (!reply.ok) throw new ServiceError(reply.kind, reply.errors);
    return reply;
  }
}
