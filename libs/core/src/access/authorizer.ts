import { wrappingTtlViolation, type Acl, type AclOperation } from '@svc/acl';
import type { Capability, Operation } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { IdentityStore } from '../identity/identity-store';
import type { Namespace } from '../namespaces/namespace';
import type { NamespaceRegistry } from '../namespaces/registry';
import type { TokenEntry } from '../tokens/token-store';

const NONE: ReadonlySet<Capability> = new Set();
/** What a wrapping token may do: look at, unwrap or rewrap what it wraps, nothing else. */
const WRAPPING_PATHS = new Set(['sys/wrapping/unwrap', 'sys/wrapping/lookup', 'sys/wrapping/rewrap']);
const WRAPPING_CAPABILITIES: ReadonlySet<Capability> = new Set(['read', 'update']);

export interface AccessRequest {
  token: TokenEntry | null;
  /** The namespace the request falls in, and the path inside it. */
  namespace: Namespace;
  path: string;
  operation: Operation;
  data: Record<string, unknown>;
  wrapTtl?: number;
}

/**
 * Step 4 of the request path: the capabilities a token's policies grant on the path, with the
 * checks that need the request itself (parameter constraints, wrapping TTL bounds). A token reaches
 * its own namespace and the namespaces below it, through policies written for those paths (relative
 * to the token's namespace); never a parent or a sibling. Create-versus-update is left to the
 * handler's existence check, which receives the capability set.
 */
export class Authorizer {
  constructor(
    private readonly namespaces: NamespaceRegistry,
    private readonly identity: (namespace: Namespace) => IdentityStore,
  ) {}

  /** At once when the token has no entity and its policies' ACL is cached, as for most requests. */
  capabilities(request: AccessRequest): ReadonlySet<Capability> | Promise<ReadonlySet<Capability>> {
    const { token, namespace } = request;
    if (!token) return NONE;
    if (token.wrapping) {
      if (!namespace.path.startsWith(token.namespace) || !WRAPPING_PATHS.has(request.path)) throw ServiceError.forbidden();
      return WRAPPING_CAPABILITIES;
    }
    const home = this.namespaces.get(token.namespace);
    if (!home || !namespace.path.startsWith(home.path)) throw ServiceError.forbidden();
    if (token.entityId) return this.effectivePolicies(home, token).then((policies) => this.withPolicies(request, home, policies));
    return this.withPolicies(request, home, token.policies);
  }

  private withPolicies(request: AccessRequest, home: Namespace, policies: string[]): ReadonlySet<Capability> | Promise<ReadonlySet<Capability>> {
    const acl = home.policies.cachedAcl(policies);
    if (acl) return decide(request, home, acl);
    return home.policies.acl(policies).then((loaded) => decide(request, home, loaded));
  }

  /** The token's policies, its entity's and its groups', read now so a change to them applies at once. */
  private async effectivePolicies(home: Namespace, token: TokenEntry & { entityId: string }): Promise<string[]> {
    const store = this.identity(home);
    const entity = await store.entity(token.entityId);
    if (!entity) return token.policies;
    if (entity.disabled) throw ServiceError.forbidden(`entity "${token.entityId}" is disabled`);
    const identityPolicies = await store.groups.identityPolicies(entity);
    return identityPolicies.length ? [...new Set([...token.policies, ...identityPolicies])] : token.policies;
  }
}

/** What the ACL grants on the request's path, with the checks that need the request itself. */
function decide(request: AccessRequest, home: Namespace, acl: Acl): ReadonlySet<Capability> {
  const { namespace, path, operation } = request;
  const aclPath = namespace.path.slice(home.path.length) + path;
  const capabilities = acl.capabilities(aclPath);
  if (acl.isRoot) return capabilities;

  if (operation === 'help') {
    if (capabilities.size === 0 || capabilities.has('deny')) throw ServiceError.forbidden();
    return capabilities;
  }
  const checked: AclOperation =
    operation === 'update' ? (capabilities.has('update') ? 'update' : 'create') : (operation as AclOperation);
  const decision = acl.authorize(aclPath, checked, request.data);
  if (!decision.allowed) throw ServiceError.forbidden(decision.reason ? `permission denied: ${decision.reason}` : undefined);
  const wrapProblem = decision.rule && wrappingTtlViolation(decision.rule, request.wrapTtl);
  if (wrapProblem) throw ServiceError.badRequest(wrapProblem);
  return capabilities;
}
