import { Backend, listPath, type FieldData, type FieldMap, type MountInfo, type PathDeclaration, type Request, type Response } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { Logins } from '../auth/logins';
import type { IdentityStore } from '../identity/identity-store';
import type { Namespace } from '../namespaces/namespace';
import type { NamespaceRegistry } from '../namespaces/registry';
import type { Router } from '../routing/router';
import { TokenManager, type NewToken, type TokenLimits } from './token-manager';
import type { TokenEntry, TokenRole, TokenStore } from './token-store';

/** What auth/token/ uses of the core: the token lifecycle and its store, logins' renewals, entities and limits. */
export interface TokenBackendDeps {
  tokenManager: Pick<TokenManager, 'create' | 'renew' | 'revokeTree' | 'revokeOrphan'> & {
    readonly store: Pick<TokenStore, 'lookup' | 'lookupAccessor' | 'role' | 'roles' | 'putRole' | 'deleteRole' | 'allAccessors' | 'tidy'>;
  };
  /** Renews a login's token as its auth method answers. */
  logins: Pick<Logins, 'renew'>;
  namespaces: Pick<NamespaceRegistry, 'get'>;
  router: Pick<Router, 'namespaceOf'>;
  /** The identity store of a namespace, for the policies of a token's entity. */
  identityStore(namespace: Namespace): Pick<IdentityStore, 'identityPolicies'>;
  /** TTL defaults and maximums of the token mount. */
  tokenLimits(mount: MountInfo): TokenLimits;
}

const CREATE_FIELDS: FieldMap = {
  id: { type: 'string', sensitive: true, description: 'Value of the token (root tokens only may choose it).' },
  policies: { type: 'comma-string-list', description: 'Policies of the token; default: the role\'s allowed policies, else the parent token\'s policies.' },
  meta: { type: 'kv-pairs', description: 'Metadata, shown in audit logs.' },
  no_parent: { type: 'bool', default: false, description: 'Create an orphan token (root or sudo only).' },
  no_default_policy: { type: 'bool', default: false, description: 'Do not attach the default policy.' },
  renewable: { type: 'bool', default: true, description: 'Whether the token can be renewed.' },
  ttl: { type: 'duration', default: 0, description: 'Initial TTL; default: the mount or system default.' },
  type: { type: 'string', allowed: ['service', 'batch'], description: 'Token type; default service.' },
  explicit_max_ttl: { type: 'duration', default: 0, description: 'Hard limit on the token\'s life, renewals included.' },
  display_name: { type: 'string', default: '', description: 'Display name; prefixed with "token-".' },
  num_uses: { type: 'int', default: 0, description: 'Uses before the token is revoked; 0 = unlimited.' },
  period: { type: 'duration', default: 0, description: 'Periodic token: every renewal resets the TTL to this.' },
  entity_alias: { type: 'string', description: 'Not supported: token roles do not create entity aliases.' },
};

const ROLE_FIELDS: FieldMap = {
  allowed_policies: { type: 'comma-string-list', default: [], description: 'Policies tokens of this role may have.' },
  disallowed_policies: { type: 'comma-string-list', default: [], description: 'Policies tokens of this role may not have.' },
  allowed_policies_glob: { type: 'comma-string-list', default: [], description: 'Glob patterns of allowed policies.' },
  disallowed_policies_glob: { type: 'comma-string-list', default: [], description: 'Glob patterns of disallowed policies.' },
  orphan: { type: 'bool', default: false, description: 'Tokens of this role are orphans.' },
  renewable: { type: 'bool', default: true, description: 'Tokens of this role are renewable.' },
  path_suffix: { type: 'string', default: '', description: 'Suffix of the creation path, for revoke-prefix.' },
  token_explicit_max_ttl: { type: 'duration', default: 0, description: 'Explicit max TTL of tokens of this role.' },
  token_period: { type: 'duration', default: 0, description: 'Period of tokens of this role.' },
  token_type: { type: 'string', default: 'default-service', allowed: ['service', 'batch', 'default-service', 'default-batch'], description: 'Token type.' },
  token_ttl: { type: 'duration', default: 0, description: 'Default TTL of tokens of this role.' },
  token_max_ttl: { type: 'duration', default: 0, description: 'Maximum TTL of tokens of this role.' },
  token_no_default_policy: { type: 'bool', default: false, description: 'Do not attach the default policy.' },
  token_num_uses: { type: 'int', default: 0, description: 'Uses of tokens of this role.' },
  allowed_entity_aliases: { type: 'comma-string-list', default: [], description: 'Not used: token roles do not create entity aliases.' },
};

const TOKEN_FIELD: FieldMap = { token: { type: 'string', sensitive: true, required: true, description: 'The token.' } };
const ACCESSOR_FIELD: FieldMap = { accessor: { type: 'string', required: true, description: 'Accessor of the token.' } };
const INCREMENT_FIELD: FieldMap = { increment: { type: 'duration', default: 0, description: 'Requested TTL extension.' } };

function isPrivileged(caller: TokenEntry, req: Request): boolean {
  return caller.policies.includes('root') || req.capabilities.has('sudo') || req.capabilities.has('root');
}

function globMatch(pattern: string, value: string): boolean {
  const re = new RegExp(`^${pattern.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  return re.test(value);
}

/** auth/token/: tokens created, looked up, renewed and revoked through the API. */
export function createTokenBackend(core: TokenBackendDeps): Backend {
  const tokens = core.tokenManager;

  const callerEntry = async (req: Request): Promise<TokenEntry> => {
    const accessor = req.caller?.tokenAccessor;
    const found = accessor ? await tokens.store.lookupAccessor(accessor, true) : null;
    if (found) return found.entry;
    // Batch tokens have no accessor: the token itself is the entry.
    const batch = req.caller?.tokenId ? await tokens.store.lookup(req.caller.tokenId) : null;
    if (batch) return batch;
    throw ServiceError.forbidden();
  };

  const byToken = async (value: string): Promise<TokenEntry> => {
    const entry = await tokens.store.lookup(value);
    if (!entry) throw ServiceError.badRequest('bad token');
    return entry;
  };

  const byAccessor = async (accessor: string): Promise<TokenEntry> => {
    const found = await tokens.store.lookupAccessor(accessor);
    if (!found) throw ServiceError.badRequest('invalid accessor');
    return found.entry;
  };

  /** A token as lookups show it, with its entity's and groups' policies as `identity_policies` (read now: they may have changed). */
  const described = async (entry: TokenEntry, id = ''): Promise<Response> => {
    const data = TokenManager.describe(entry, id);
    const namespace = entry.entityId ? core.namespaces.get(entry.namespace) : undefined;
    const identityPolicies = namespace ? await core.identityStore(namespace).identityPolicies(entry.entityId) : [];
    return { data: identityPolicies.length ? { ...data, identity_policies: identityPolicies } : data };
  };

  const authResponse = (id: string, entry: TokenEntry): Response => ({ token: TokenManager.issued(id, entry) });

  const limits = (req: Request) => core.tokenLimits(req.mount);

  async function create(req: Request, f: FieldData, mode: 'create' | 'orphan' | 'role'): Promise<Response> {
    const parent = await callerEntry(req);
    const role = mode === 'role' ? await tokens.store.role(f.params.role_name) : null;
    if (mode === 'role' && !role) throw ServiceError.badRequest(`unknown role ${f.params.role_name}`);
    if (parent.type === 'batch') throw ServiceError.badRequest('batch tokens cannot create more tokens');
    const privileged = isPrivileged(parent, req);
    if (f.has('id') && !privileged) throw ServiceError.badRequest('root or sudo privileges required to specify token id');
    if (f.get('no_parent') && !privileged) throw ServiceError.badRequest('root or sudo privileges required to create orphan token');
    if (f.has('entity_alias')) throw ServiceError.badRequest('entity_alias is not supported: token roles do not create entity aliases');
    const orphan = mode === 'orphan' || f.get<boolean>('no_parent') || (role?.orphan ?? false);

    let policies = f.has('policies') ? f.get<string[]>('policies') : defaultPolicies(parent, role);
    policies = [...new Set(policies.map((p) => p.trim().toLowerCase()).filter(Boolean))];
    const noDefault = f.get<boolean>('no_default_policy') || (role?.token_no_default_policy ?? false);
    if (role) enforceRole(role, policies);
    // Vault's rule: root or sudo may give a child policies it does not hold itself.
    else if (!privileged) {
      const outside = policies.filter((p) => p !== 'default' && !parent.policies.includes(p));
      if (outside.length > 0) throw ServiceError.badRequest(`child policies must be subset of parent: ${outside.join(', ')}`);
    }
    if (policies.includes('root') && !parent.policies.includes('root')) throw ServiceError.badRequest('root tokens may only be created by root tokens');
    if (!noDefault && !policies.includes('root') && !policies.includes('default')) policies.push('default');

    const roleType = role?.token_type.replace('default-', '') as 'service' | 'batch' | undefined;
    const type = f.get<'service' | 'batch'>('type') ?? roleType ?? 'service';
    if (role && (role.token_type === 'service' || role.token_type === 'batch') && f.has('type') && type !== role.token_type) {
      throw ServiceError.badRequest(`role only allows ${role.token_type} tokens`);
    }
    const period = f.get<number>('period') || role?.token_period || 0;
    if (f.get<number>('period') > 0 && !privileged && !role) throw ServiceError.badRequest('root or sudo privileges required to create periodic token');
    const numUses = f.get<number>('num_uses') || role?.token_num_uses || 0;
    if (numUses < 0) throw ServiceError.badRequest('field "num_uses" cannot be negative');
    if (type === 'batch' && (period > 0 || numUses > 0 || policies.includes('root'))) {
      throw ServiceError.badRequest('batch tokens cannot be periodic, limited-use or root tokens');
    }
    const explicitMaxTtl = minPositive(f.get<number>('explicit_max_ttl'), role?.token_explicit_max_ttl ?? 0);
    const tokenLimits = limits(req);
    const maxTtl = minPositive(tokenLimits.maxTtl, role?.token_max_ttl ?? 0);
    const requested = f.get<number>('ttl') || role?.token_ttl || 0;
    const root = policies.includes('root') && requested === 0 && explicitMaxTtl === 0 && period === 0;
    const spec: NewToken = {
      parent: orphan ? null : parent,
      policies,
      meta: f.has('meta') ? f.get('meta') : null,
      displayName: `token${f.get<string>('display_name') ? `-${f.get<string>('display_name')}` : ''}`,
      numUses,
      ttl: root ? 0 : TokenManager.effectiveTtl(requested, { explicitMaxTtl, period }, { ...tokenLimits, maxTtl }),
      explicitMaxTtl,
      period,
      renewable: f.get<boolean>('renewable') && (role?.renewable ?? true),
      type,
      namespace: req.mount.namespace,
      namespaceId: core.router.namespaceOf(req).record.id,
      role: role?.name ?? '',
      path: `auth/token/create${role ? `/${role.name}${role.path_suffix ? `/${role.path_suffix}` : ''}` : ''}`,
      id: f.has('id') ? f.get<string>('id') : undefined,
      // As in Vault, a child token belongs to its parent's entity; an orphan to none.
      entityId: orphan ? undefined : parent.entityId || undefined,
    };
    const created = await tokens.create(spec);
    return authResponse(created.id, created.entry);
  }

  const lookupPaths: PathDeclaration[] = [
    {
      pattern: 'lookup',
      synopsis: 'Looks up a token.',
      fields: TOKEN_FIELD,
      operations: {
        update: { summary: 'Look up a token.', handler: async (_req, f) => described(await byToken(f.get('token')), f.get('token')) },
      },
    },
    {
      pattern: 'lookup-self',
      synopsis: 'Looks up the calling token.',
      operations: {
        read: { summary: 'Look up the calling token.', handler: async (req) => described(await callerEntry(req), req.caller?.tokenId ?? '') },
      },
    },
    {
      pattern: 'lookup-accessor',
      synopsis: 'Looks up a token by its accessor.',
      fields: ACCESSOR_FIELD,
      operations: {
        update: { summary: 'Look up a token by accessor.', handler: async (_req, f) => described(await byAccessor(f.get('accessor'))) },
      },
    },
  ];

  // A login's token is renewed as its auth method answers (it may refuse); others by the token store's limits.
  const renew = async (req: Request, entry: TokenEntry, increment: number, id = ''): Promise<Response> =>
    authResponse(id, entry.login ? await core.logins.renew(entry, increment, req.requestId) : await tokens.renew(entry.accessor, increment, limits(req), core.router.namespaceOf(req).record.id));

  const renewPaths: PathDeclaration[] = [
    {
      pattern: 'renew',
      synopsis: 'Renews a token.',
      fields: { ...TOKEN_FIELD, ...INCREMENT_FIELD },
      operations: { update: { summary: 'Renew a token.', handler: async (req, f) => renew(req, await byToken(f.get('token')), f.get('increment'), f.get('token')) } },
    },
    {
      pattern: 'renew-self',
      synopsis: 'Renews the calling token.',
      fields: INCREMENT_FIELD,
      operations: {
        update: { summary: 'Renew the calling token.', handler: async (req, f) => renew(req, await callerEntry(req), f.get('increment'), req.caller?.tokenId ?? '') },
      },
    },
    {
      pattern: 'renew-accessor',
      synopsis: 'Renews a token by its accessor.',
      fields: { ...ACCESSOR_FIELD, ...INCREMENT_FIELD },
      operations: { update: { summary: 'Renew a token by accessor.', handler: async (req, f) => renew(req, await byAccessor(f.get('accessor')), f.get('increment')) } },
    },
  ];

  const revoked = async (accessor: string | undefined, orphan = false): Promise<undefined> => {
    if (accessor) await (orphan ? tokens.revokeOrphan(accessor) : tokens.revokeTree(accessor));
    return undefined;
  };

  const revokePaths: PathDeclaration[] = [
    {
      pattern: 'revoke',
      synopsis: 'Revokes a token, its children and their leases.',
      fields: TOKEN_FIELD,
      operations: { update: { summary: 'Revoke a token.', handler: async (_req, f) => revoked((await tokens.store.lookup(f.get('token')))?.accessor) } },
    },
    {
      pattern: 'revoke-self',
      synopsis: 'Revokes the calling token and its children.',
      operations: { update: { summary: 'Revoke the calling token.', handler: async (req) => revoked((await callerEntry(req)).accessor) } },
    },
    {
      pattern: 'revoke-accessor',
      synopsis: 'Revokes a token by its accessor.',
      fields: ACCESSOR_FIELD,
      operations: { update: { summary: 'Revoke a token by accessor.', handler: async (_req, f) => revoked((await byAccessor(f.get('accessor'))).accessor) } },
    },
    {
      pattern: 'revoke-orphan',
      synopsis: 'Revokes a token but not its children, which become orphans.',
      fields: TOKEN_FIELD,
      operations: {
        update: { summary: 'Revoke a token, orphaning its children.', sudo: true, handler: async (_req, f) => revoked((await byToken(f.get('token'))).accessor, true) },
      },
    },
  ];

  const createPaths: PathDeclaration[] = [
    {
      pattern: 'create',
      synopsis: 'Creates a token (a child of the calling token unless orphaned).',
      fields: CREATE_FIELDS,
      operations: { update: { summary: 'Create a token.', handler: (req, f) => create(req, f, 'create') } },
    },
    {
      pattern: 'create-orphan',
      synopsis: 'Creates an orphan token.',
      fields: CREATE_FIELDS,
      operations: { update: { summary: 'Create an orphan token.', handler: (req, f) => create(req, f, 'orphan') } },
    },
    {
      pattern: 'create/:role_name',
      synopsis: 'Creates a token under a role.',
      fields: CREATE_FIELDS,
      operations: { update: { summary: 'Create a token with a role.', handler: (req, f) => create(req, f, 'role') } },
    },
  ];

  const rolePaths: PathDeclaration[] = [
    listPath({ pattern: 'roles/', synopsis: 'Lists token roles.', summary: 'List token roles.', names: () => tokens.store.roles() }),
    {
      pattern: 'roles/:role_name',
      synopsis: 'Manages a token role.',
      fields: ROLE_FIELDS,
      existenceCheck: async (_req, f) => (await tokens.store.role(f.params.role_name)) !== null,
      operations: {
        read: {
          summary: 'Read a token role.',
          handler: async (_req, f) => {
            const role = await tokens.store.role(f.params.role_name);
            return role ? { data: { ...role } } : undefined;
          },
        },
        create: { summary: 'Create a token role.', handler: (_req, f) => writeRole(f, null) },
        update: { summary: 'Update a token role.', handler: async (_req, f) => writeRole(f, await tokens.store.role(f.params.role_name)) },
        delete: {
          summary: 'Delete a token role.',
          handler: async (_req, f) => {
            await tokens.store.deleteRole(f.params.role_name);
            return undefined;
          },
        },
      },
    },
  ];

  async function writeRole(f: FieldData, existing: TokenRole | null): Promise<undefined> {
    const pick = <K extends keyof TokenRole>(name: K): TokenRole[K] =>
      (f.has(name) || !existing ? f.get<TokenRole[K]>(name) : existing[name]) as TokenRole[K];
    const role: TokenRole = {
      name: f.params.role_name,
      allowed_policies: pick('allowed_policies'),
      disallowed_policies: pick('disallowed_policies'),
      allowed_policies_glob: pick('allowed_policies_glob'),
      disallowed_policies_glob: pick('disallowed_policies_glob'),
      orphan: pick('orphan'),
      renewable: pick('renewable'),
      path_suffix: pick('path_suffix'),
      token_explicit_max_ttl: pick('token_explicit_max_ttl'),
      token_period: pick('token_period'),
      token_type: pick('token_type'),
      token_ttl: pick('token_ttl'),
      token_max_ttl: pick('token_max_ttl'),
      token_no_default_policy: pick('token_no_default_policy'),
      token_num_uses: pick('token_num_uses'),
      allowed_entity_aliases: pick('allowed_entity_aliases'),
    };
    if (role.token_max_ttl > 0 && role.token_ttl > role.token_max_ttl) throw ServiceError.badRequest('token_ttl cannot be greater than token_max_ttl');
    if (role.path_suffix.split('/').some((s) => s === '..')) throw ServiceError.badRequest('path_suffix cannot contain ".."');
    await tokens.store.putRole(role);
    return undefined;
  }

  function enforceRole(role: TokenRole, policies: string[]): void {
    for (const policy of policies) {
      if (policy === 'default') continue;
      const disallowed = role.disallowed_policies.includes(policy) || role.disallowed_policies_glob.some((g) => globMatch(g, policy));
      const allowedList = role.allowed_policies.length > 0 || role.allowed_policies_glob.length > 0;
      const allowed = role.allowed_policies.includes(policy) || role.allowed_policies_glob.some((g) => globMatch(g, policy));
      if (disallowed || (allowedList && !allowed)) throw ServiceError.badRequest(`token policies (${policy}) must be subset of the role's allowed policies`);
    }
  }

  const adminPaths: PathDeclaration[] = [
    listPath({ pattern: 'accessors/', synopsis: 'Lists the accessors of every token.', summary: 'List token accessors.', sudo: true, names: () => tokens.store.allAccessors() }),
    {
      pattern: 'tidy',
      synopsis: 'Removes dangling token index entries.',
      operations: {
        update: {
          summary: 'Tidy the token store.',
          handler: async () => ({ data: { removed_parent_entries: await tokens.store.tidy() }, warnings: ['Tidy operation successfully completed'] }),
        },
      },
    },
  ];

  return new Backend({
    type: 'token',
    help: 'The token store: creates, looks up, renews and revokes tokens. Tokens form a tree: revoking a token revokes its children and their leases.',
    paths: [...createPaths, ...lookupPaths, ...renewPaths, ...revokePaths, ...rolePaths, ...adminPaths],
  });
}

/** Policies of a token created without `policies`: a role's allowed policies when it names some, else the parent's. */
function defaultPolicies(parent: TokenEntry, role: TokenRole | null): string[] {
  if (role && role.allowed_policies.length > 0) return role.allowed_policies;
  return parent.policies.filter((p) => p !== 'default');
}

function minPositive(a: number, b: number): number {
  if (a > 0 && b > 0) return Math.min(a, b);
  return a > 0 ? a : b;
}
