import type { Acl, PathRule } from '@svc/acl';
import type { PathDeclaration, Request, Response } from '@svc/framework';
import { ServiceError, VERSION } from '@svc/api-contract';
import type { MountEntry } from '../mounts/mount-table';
import type { NamespaceRegistry } from '../namespaces/registry';
import type { TokenEntry, TokenStore } from '../tokens/token-store';
import { describeMount } from './mount-paths';
import { tokenAcl, type TokenAclDeps } from './policy-paths';

/** What the UI's paths use of the core: the calling token, its ACL, and the namespaces it may reach. */
export interface InternalUiPathsDeps extends TokenAclDeps {
  namespaces: Pick<NamespaceRegistry, 'get' | 'all'>;
  tokens: Pick<TokenStore, 'lookup'>;
}

/** A mount's `listing_visibility` that shows it to callers without a token. */
const UNAUTH_VISIBLE = 'unauth';

/** What the UI learns of a mount listed for a caller without a token. */
function publicView(entry: MountEntry): Record<string, unknown> {
  return { type: entry.type, description: entry.description, options: Object.keys(entry.options).length ? entry.options : null };
}

/** Capabilities of a rule as resultant-acl shows them. */
function ruleView(rule: PathRule): Record<string, unknown> {
  return { capabilities: [...rule.capabilities].sort() };
}

/** resultant-acl: the token's merged rules, exact patterns apart from globs, as Vault's UI reads them. */
function resultantAcl(acl: Acl): Response {
  if (acl.isRoot) return { data: { root: true, exact_paths: {}, glob_paths: {} } };
  const exact: Record<string, unknown> = {};
  const glob: Record<string, unknown> = {};
  for (const rule of acl.rules) {
    if (rule.pattern.endsWith('*')) glob[rule.pattern.slice(0, -1)] = ruleView(rule);
    else exact[rule.pattern] = ruleView(rule);
  }
  return { data: { root: false, exact_paths: exact, glob_paths: glob } };
}

/**
 * sys/internal/ui/*: what Vault's UI and Vault-family clients ask before they know what a token can
 * do. Mounts are listed to a token that can reach some path under them, and to anyone when tuned
 * `listing_visibility = "unauth"`; a single mount only to a token that can reach it.
 */
export function internalUiPaths(core: InternalUiPathsDeps): PathDeclaration[] {
  const callerToken = async (req: Request): Promise<TokenEntry | null> => (req.caller?.tokenId ? core.tokens.lookup(req.caller.tokenId) : null);

  /** Whether the token's policies reach some path under `path` (a path of the request's namespace). */
  const reaches = async (req: Request, token: TokenEntry, path: string): Promise<boolean> => {
    const { acl, prefix } = await tokenAcl(core, req, token);
    return acl.grantsUnder(prefix + path);
  };

  const listMounts = async (req: Request): Promise<Response> => {
    const token = await callerToken(req);
    const namespace = core.router.namespaceOf(req);
    const visible = async (entries: MountEntry[], tablePrefix: string) => {
      const shown: Record<string, unknown> = {};
      for (const entry of entries) {
        if (token && (await reaches(req, token, tablePrefix + entry.path))) shown[entry.path] = describeMount(entry);
        else if (entry.config.listing_visibility === UNAUTH_VISIBLE) shown[entry.path] = publicView(entry);
      }
      return shown;
    };
    return { data: { secret: await visible(namespace.secretMounts.list(), ''), auth: await visible(namespace.authMounts.list(), 'auth/') } };
  };

  const readMount = async (req: Request, path: string): Promise<Response> => {
    const denied = ServiceError.forbidden(`preflight capability check returned 403, please ensure client's policies grant access to path "${path}"`);
    const token = await callerToken(req);
    if (!token) throw denied;
    const route = core.router.namespaceOf(req).route(path.endsWith('/') ? path : `${path}/`);
    if (!route) throw denied;
    const tablePrefix = route.table === core.router.namespaceOf(req).authMounts ? 'auth/' : '';
    if (!(await reaches(req, token, tablePrefix + route.mount.path))) throw denied;
    return { data: { ...describeMount(route.mount), path: tablePrefix + route.mount.path } };
  };

  const listNamespaces = async (req: Request): Promise<Response> => {
    const token = await callerToken(req);
    const here = core.router.namespaceOf(req);
    const keys: string[] = [];
    if (token) {
      const home = core.namespaces.get(token.namespace);
      for (const namespace of core.namespaces.all()) {
        const below = namespace.path.startsWith(here.path) && namespace.path !== here.path;
        if (!below || !home || !namespace.path.startsWith(home.path)) continue;
        if (await reaches(req, token, namespace.path.slice(here.path.length))) keys.push(namespace.path.slice(here.path.length));
      }
    }
    return { data: { keys: keys.sort() } };
  };

  return [
    {
      pattern: 'internal/ui/mounts',
      synopsis: 'The mounts the caller may see: those its token reaches, and those tuned visible without a token.',
      operations: { read: { summary: 'List the visible mounts.', unauthenticated: true, handler: listMounts } },
    },
    {
      pattern: 'internal/ui/mounts/*path',
      synopsis: 'One mount, when the calling token reaches some path under it.',
      operations: { read: { summary: 'Read a mount the token can use.', unauthenticated: true, handler: (req, f) => readMount(req, f.params.path) } },
    },
    {
      pattern: 'internal/ui/resultant-acl',
      synopsis: "The calling token's combined policy rules, for the UI to show what it may do.",
      operations: {
        read: {
          summary: 'Read the resultant ACL of the calling token.',
          handler: async (req) => {
            const token = await callerToken(req);
            if (!token) throw ServiceError.forbidden();
            return resultantAcl((await tokenAcl(core, req, token)).acl);
          },
        },
      },
    },
    {
      pattern: 'internal/ui/namespaces',
      synopsis: 'The namespaces below the current one that the calling token can reach.',
      operations: { read: { summary: 'List reachable namespaces.', unauthenticated: true, handler: listNamespaces } },
    },
    {
      pattern: 'internal/ui/version',
      synopsis: 'The version of this server.',
      operations: { read: { summary: 'Read the version.', unauthenticated: true, handler: async () => ({ data: { version: VERSION } }) } },
    },
    {
      pattern: 'internal/ui/feature-flags',
      synopsis: 'Feature flags the UI reads before login (none are set by this server).',
      operations: { read: { summary: 'List the feature flags.', unauthenticated: true, handler: async () => ({ raw: { feature_flags: [] } }) } },
    },
  ];
}
