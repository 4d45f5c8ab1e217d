import type { EngineReply, EngineRequest } from '@svc/engine-host';
import type { AuthResponse, MountInfo, Response } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { Entity, IdentityStore } from '../identity/identity-store';
import { writeHereOrOnPrimary, type ForwardToPrimary } from '../request/forwarding';
import type { Namespace } from '../namespaces/namespace';
import type { NamespaceRegistry } from '../namespaces/registry';
import { TokenManager, type TokenLimits } from '../tokens/token-manager';
import type { TokenEntry } from '../tokens/token-store';

export interface LoginsDeps {
  tokens: TokenManager;
  namespaces: NamespaceRegistry;
  /** TTL defaults and maximums of a mount (its tune, else the system's). */
  limits(mount: MountInfo): TokenLimits;
  /** Sends a message to the engine owning a mount (Core.dispatch). */
  dispatch(message: EngineRequest): Promise<EngineReply>;
  /** The identity store of a namespace, where a login finds or creates its entity. */
  identity(namespace: Namespace): IdentityStore;
  /**
   * On a performance secondary, a new entity or alias is replicated data: the primary makes it,
   * while the login's token stays a token of this cluster.
   */
  forwardToPrimary?: ForwardToPrimary;
}

/** Where a login happened: the namespace, the auth mount, and the path inside the namespace ("auth/userpass/login/alice"). */
export interface LoginPlace {
  namespace: Namespace;
  mount: MountInfo;
  path: string;
}

/**
 * The login path (Vault's handleLoginRequest and LoginCreateToken): an auth method answers a login
 * with an `auth`, and the core makes the token of it. The method decides who the caller is and what
 * it may have; the core applies the limits every token obeys (mount and system maximum TTL, the
 * `default` policy, no root tokens) and, on renewal, asks the method again.
 */
export class Logins {
  constructor(private readonly deps: LoginsDeps) {}

  /** Creates the token a login's `auth` describes; the answer carries the token instead of the `auth`. */
  async complete(place: LoginPlace, response: Response): Promise<Response> {
    const { auth, ...rest } = response;
    if (!auth) return response;
    // Only auth methods log in; a secrets engine answering with an auth is a bug, not a login.
    if (!place.path.startsWith('auth/')) throw ServiceError.internal('a secrets engine answered with an auth');
    const policies = tokenPolicies(auth);
    const type = auth.tokenType === 'batch' || auth.tokenType === 'default-batch' ? 'batch' : 'service';
    const period = auth.period ?? 0;
    const numUses = auth.numUses ?? 0;
    if (type === 'batch' && (period > 0 || numUses > 0)) throw ServiceError.badRequest('batch tokens cannot be periodic or limited-use');
    const explicitMaxTtl = auth.explicitMaxTtl ?? 0;
    const limits = this.limits(place.mount, auth);
    // The method vouched for a name on its mount: that alias's entity (a new one on a first login) owns the token.
    const entity = auth.alias ? await this.loginEntity(place, auth.alias.name, auth.alias.metadata ?? {}, auth.groupAliases) : undefined;
    if (entity?.disabled) throw ServiceError.forbidden(`entity "${entity.id}" is disabled`);
    const { id, entry } = await this.deps.tokens.create({
      parent: null, // login tokens are orphans, as in Vault
      policies,
      meta: auth.metadata ?? null,
      displayName: `${place.mount.path.replace(/\/+$/, '').replaceAll('/', '-')}-${auth.displayName}`,
      numUses,
      ttl: TokenManager.effectiveTtl(auth.ttl, { explicitMaxTtl, period }, limits),
      explicitMaxTtl,
      period,
      renewable: auth.renewable,
      type,
      namespace: place.namespace.path,
      namespaceId: place.namespace.record.id,
      role: '',
      path: place.path,
      boundCidrs: auth.boundCidrs,
      entityId: entity?.id,
      login: { mountAccessor: place.mount.accessor, auth: { ...auth, policies } },
    });
    const issued = TokenManager.issued(id, entry);
    const identityPolicies = entity ? await this.deps.identity(place.namespace).groups.identityPolicies(entity) : [];
    if (!identityPolicies.length) return { ...rest, token: issued };
    // As in Vault, the login's answer shows the entity's and its groups' policies beside the token's own.
    const allPolicies = [...new Set([...policies, ...identityPolicies])];
    return { ...rest, token: { ...issued, auth: { ...issued.auth, policies: allPolicies, identity_policies: identityPolicies } } };
  }

  private loginEntity(place: LoginPlace, name: string, metadata: Record<string, string>, groupAliases: string[] | undefined): Promise<Entity> {
    const store = this.deps.identity(place.namespace);
    const body = { namespace: place.namespace.path, mount_accessor: place.mount.accessor, name, metadata, group_aliases: groupAliases };
    return writeHereOrOnPrimary(
      () => store.loginEntity(place.mount.accessor, name, metadata, groupAliases),
      this.deps.forwardToPrimary,
      'login-entity',
      body,
      (answer) => answer.entity as Entity,
    );
  }

  /**
   * Renews a login's token: the auth method re-checks (the user or role still exists, say) and
   * answers the TTL and policies to renew with, or refuses (its 4xx is the renewal's answer).
   */
  async renew(entry: TokenEntry, increment: number, requestId: string): Promise<TokenEntry> {
    const login = entry.login!;
    const namespace = this.deps.namespaces.get(entry.namespace);
    const mount = namespace?.authMounts.list().find((candidate) => candidate.accessor === login.mountAccessor);
    if (!namespace || !mount) throw ServiceError.badRequest('the auth method that issued this token is no longer enabled');
    const reply = await this.deps.dispatch({
      kind: 'renew-auth',
      requestId,
      mount,
      path: '',
      operation: 'update',
      data: { increment },
      capabilities: ['root'],
      auth: login.auth,
    });
    if (!reply.ok) throw new ServiceError(reply.kind, reply.errors);
    const renewed = reply.response?.auth;
    if (!renewed) throw ServiceError.internal('the auth method answered a renewal without an auth');
    const policies = tokenPolicies(renewed);
    return this.deps.tokens.renew(entry.accessor, renewed.ttl || increment, this.limits(mount, renewed), namespace.record.id, {
      policies,
      login: { ...login, auth: { ...renewed, policies } },
    });
  }

  /** The mount's limits, with the method's own maximum below them. */
  private limits(mount: MountInfo, auth: AuthResponse): TokenLimits {
    const limits = this.deps.limits(mount);
    const methodMax = auth.maxTtl ?? 0;
    return methodMax > 0 && (limits.maxTtl === 0 || methodMax < limits.maxTtl) ? { ...limits, maxTtl: methodMax } : limits;
  }
}

/** The policies a method named, normalized, with `default` unless it said not to; never root. */
function tokenPolicies(auth: AuthResponse): string[] {
  const policies = [...new Set(auth.policies.map((policy) => policy.trim().toLowerCase()).filter(Boolean))];
  if (policies.includes('root')) throw ServiceError.badRequest('auth methods cannot create root tokens');
  if (!auth.noDefaultPolicy && !policies.includes('default')) policies.push('default');
  return policies;
}
