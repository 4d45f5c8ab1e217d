import type { IssuedToken } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { ExpirationManager } from '../leases/expiration';
import type { LeaseEntry } from '../leases/lease';
import { nowSeconds, remainingTtl, expireTime, type TokenEntry, type TokenStore } from './token-store';

export interface TokenLimits {
  /** Mount (auth/token tune) or system default and maximum TTL, seconds. */
  defaultTtl: number;
  maxTtl: number;
}

/** What a new token is made of: the entry's own fields, its parent, and where it lives. */
export type NewToken = Pick<
  TokenEntry,
  | 'policies'
  | 'meta'
  | 'displayName'
  | 'numUses'
  | 'ttl'
  | 'explicitMaxTtl'
  | 'period'
  | 'renewable'
  | 'type'
  | 'namespace'
  | 'role'
  | 'path'
  | 'wrapping'
  | 'boundCidrs'
  | 'login'
> & {
  /** The entity a login's alias belongs to. */
  entityId?: string;
  parent: TokenEntry | null;
  namespaceId: string;
  /** Chosen token value (root/sudo callers and dev mode). */
  id?: string;
};

export interface TokenHooks {
  /** Revokes the leases a token created (engine revocations). */
  revokeLeasesOf(tokenAccessor: string): Promise<void>;
  /** Deletes the token's cubbyhole. */
  purgeCubbyhole(tokenAccessor: string): Promise<void>;
}

/** Token lifecycle above the store: TTL rules, the parent/child tree, token leases, revocation. */
export class TokenManager {
  constructor(
    readonly store: TokenStore,
    private readonly leases: ExpirationManager,
    private readonly hooks: TokenHooks,
  ) {}

  /** Effective TTL: requested, else period, else the default; never past explicit max or system max. */
  static effectiveTtl(requested: number, token: Pick<NewToken, 'explicitMaxTtl' | 'period'>, limits: TokenLimits): number {
    let ttl = token.period > 0 ? token.period : requested > 0 ? requested : limits.defaultTtl;
    if (token.explicitMaxTtl > 0) ttl = Math.min(ttl, token.explicitMaxTtl);
    if (token.period === 0 && limits.maxTtl > 0) ttl = Math.min(ttl, limits.maxTtl);
    return ttl;
  }

  async create(spec: NewToken): Promise<{ id: string; entry: TokenEntry }> {
    const now = nowSeconds();
    const created = await this.store.create(
      {
        parent: spec.parent?.accessor ?? '',
        policies: spec.policies,
        meta: spec.meta,
        displayName: spec.displayName,
        numUses: spec.numUses,
        creationTime: now,
        lastRenewalTime: now,
        ttl: spec.ttl,
        explicitMaxTtl: spec.explicitMaxTtl,
        period: spec.period,
        renewable: spec.type === 'batch' ? false : spec.renewable,
        type: spec.type,
        namespace: spec.namespace,
        role: spec.role,
        path: spec.path,
        entityId: spec.entityId ?? '',
        ...(spec.wrapping ? { wrapping: true } : {}),
        ...(spec.boundCidrs?.length ? { boundCidrs: spec.boundCidrs } : {}),
        ...(spec.login ? { login: spec.login } : {}),
      },
      spec.id,
    );
    if (created.entry.type === 'service' && created.entry.ttl > 0) await this.putTokenLease(spec.namespaceId, created.entry);
    return created;
  }

  /**
   * Renews a token: a new TTL from now, bounded by its period, explicit max and the maximums. A
   * login's token also takes what its auth method answered on renewal (`refreshed`).
   */
  async renew(accessor: string, increment: number, limits: TokenLimits, namespaceId: string, refreshed?: Pick<TokenEntry, 'policies' | 'login'>): Promise<TokenEntry> {
    const now = nowSeconds();
    const renewed = await this.store.update(accessor, (current) => {
      if (!current.renewable) throw ServiceError.badRequest('token is not renewable');
      const entry = refreshed ? { ...current, ...refreshed } : current;
      if (entry.ttl === 0) return entry;
      let ttl = TokenManager.effectiveTtl(increment, entry, limits);
      if (entry.explicitMaxTtl > 0) ttl = Math.min(ttl, entry.creationTime + entry.explicitMaxTtl - now);
      if (entry.period === 0 && limits.maxTtl > 0) ttl = Math.min(ttl, entry.creationTime + limits.maxTtl - now);
      // At its maximum the token cannot be extended; it keeps its current expiry.
      return ttl > 0 ? { ...entry, ttl, lastRenewalTime: now } : entry;
    });
    if (renewed.ttl > 0) await this.putTokenLease(namespaceId, renewed);
    return renewed;
  }

  /** Revokes a token, its descendants, their leases and cubbyholes. */
  async revokeTree(accessor: string): Promise<void> {
    for (const child of await this.store.children(accessor)) await this.revokeTree(child);
    await this.revokeOne(accessor);
  }

  /** revoke-orphan: the token goes, its children stay (as orphans). */
  async revokeOrphan(accessor: string): Promise<void> {
    await this.store.orphanChildren(accessor);
    await this.revokeOne(accessor);
  }

  private async revokeOne(accessor: string): Promise<void> {
    await this.hooks.revokeLeasesOf(accessor);
    await this.hooks.purgeCubbyhole(accessor);
    await this.store.remove(accessor);
  }

  private async putTokenLease(namespaceId: string, entry: TokenEntry): Promise<void> {
    const expires = expireTime(entry)!;
    const lease: LeaseEntry = {
      leaseId: TokenManager.leaseId(entry),
      namespace: entry.namespace,
      kind: 'token',
      mountAccessor: '',
      secretType: 'token',
      internalData: {},
      tokenAccessor: '',
      issueTime: entry.creationTime,
      lastRenewalTime: entry.lastRenewalTime,
      expireTime: expires,
      maxExpireTime: entry.explicitMaxTtl > 0 ? entry.creationTime + entry.explicitMaxTtl : 0,
      renewable: entry.renewable,
      revokeAttempts: 0,
    };
    await this.leases.put(namespaceId, lease);
  }

  /**
   * A token's lease: a login's under its login path (so revoking that prefix, or disabling the
   * method, revokes the tokens it issued, as in Vault); the token store's under auth/token/create/.
   */
  static leaseId(entry: TokenEntry): string {
    return entry.login ? `${entry.path}/${entry.accessor}` : `auth/token/create/${entry.accessor}`;
  }

  /** A token just created or renewed, as the envelope's `auth` block shows it (value given only to its holder). */
  static issued(id: string, entry: TokenEntry): IssuedToken {
    return {
      auth: {
        client_token: id,
        accessor: entry.accessor,
        policies: entry.policies,
        token_policies: entry.policies,
        metadata: entry.meta,
        lease_duration: entry.ttl,
        renewable: entry.renewable,
        entity_id: entry.entityId,
        token_type: entry.type,
        orphan: entry.parent === '',
        mfa_requirement: null,
        num_uses: Math.max(0, entry.numUses),
      },
      displayName: entry.displayName,
    };
  }

  /** The token as lookup endpoints show it. `id` only when the caller presented the token itself. */
  static describe(entry: TokenEntry, id = ''): Record<string, unknown> {
    const expires = expireTime(entry);
    return {
      accessor: entry.accessor,
      creation_time: entry.creationTime,
      creation_ttl: entry.ttl,
      display_name: entry.displayName,
      entity_id: entry.entityId,
      expire_time: expires === undefined ? null : new Date(expires * 1000).toISOString(),
      explicit_max_ttl: entry.explicitMaxTtl,
      id,
      issue_time: new Date(entry.creationTime * 1000).toISOString(),
      meta: entry.meta,
      num_uses: Math.max(0, entry.numUses),
      orphan: entry.parent === '',
      path: entry.path,
      period: entry.period || undefined,
      policies: entry.policies,
      renewable: entry.renewable,
      role: entry.role || undefined,
      ttl: remainingTtl(entry),
      type: entry.type,
      namespace_path: entry.namespace,
      ...(entry.boundCidrs ? { bound_cidrs: entry.boundCidrs } : {}),
    };
  }
}
