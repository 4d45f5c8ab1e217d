import { Acl } from '@svc/acl';
import { listResponse, type FieldData, type PathDeclaration, type Request, type Response } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { NamespaceRegistry } from '../namespaces/registry';
import type { Router } from '../routing/router';
import type { TokenEntry, TokenStore } from '../tokens/token-store';

/** What `tokenAcl` uses: the token's home namespace (its policies) and the request's. */
export interface TokenAclDeps {
  namespaces: Pick<NamespaceRegistry, 'get'>;
  router: Pick<Router, 'namespaceOf'>;
}

/** What sys/policies, sys/policy and sys/capabilities* use of the core's parts. */
export interface PolicyPathsDeps extends TokenAclDeps {
  /** The tokens whose capabilities are asked about, by value or by accessor. */
  tokens: Pick<TokenStore, 'lookup' | 'lookupAccessor'>;
}

const POLICY_FIELDS = {
  policy: { type: 'string' as const, required: true, description: 'The policy document (HCL or JSON; base64 accepted).' },
};

/** Vault accepts policy text base64-encoded as well. */
function policyText(raw: string): string {
  const trimmed = raw.trim();
  if (/^[A-Za-z0-9+/=\s]+$/.test(trimmed) && !/^path\b/.test(trimmed)) {
    const decoded = Buffer.from(trimmed, 'base64').toString('utf8');
    if (/\bpath\b/.test(decoded)) return decoded;
  }
  return raw;
}

/** The ACL of a token outside its namespace: no policy, no capability. */
const NO_RIGHTS = new Acl([]);

/**
 * A token's ACL, and the prefix that turns a path of the request's namespace into one of the
 * token's own namespace (where its policies' paths are written).
 */
export async function tokenAcl(core: TokenAclDeps, req: Request, token: TokenEntry): Promise<{ acl: Acl; prefix: string }> {
  const home = core.namespaces.get(token.namespace);
  if (!home) throw ServiceError.badRequest("the token's namespace no longer exists");
  const here = core.router.namespaceOf(req).path;
  // A token has no rights above or beside its own namespace, as on the request path.
  if (!here.startsWith(home.path)) return { acl: NO_RIGHTS, prefix: '' };
  const acl = token.policies.includes('root') ? Acl.root() : await home.policies.acl(token.policies);
  return { acl, prefix: here.slice(home.path.length) };
}

/** sys/policies/acl, the legacy sys/policy, and sys/capabilities*. */
export function policyPaths(core: PolicyPathsDeps): PathDeclaration[] {
  const store = (req: Request) => core.router.namespaceOf(req).policies;

  const readPolicy = async (req: Request, name: string, legacy: boolean) => {
    const lower = name.toLowerCase();
    if (lower === 'root') return { data: { name: 'root', policy: '', ...(legacy ? { rules: '' } : {}) } };
    const policy = await store(req).get(lower);
    if (!policy) throw ServiceError.notFound(`no policy named "${lower}"`);
    return { data: { name: policy.name, policy: policy.text, ...(legacy ? { rules: policy.text } : {}) } };
  };

  const writePolicy = async (req: Request, name: string, text: string): Promise<undefined> => {
    await store(req).put(name.toLowerCase(), policyText(text));
    return undefined;
  };
  const deletePolicy = async (req: Request, name: string): Promise<undefined> => {
    await store(req).delete(name.toLowerCase());
    return undefined;
  };

  const legacyList = async (req: Request): Promise<Response> => {
    const names = await store(req).list();
    return { data: { keys: names, policies: names } };
  };
  /** The legacy path still takes the policy as `rules`, with a warning, as Vault does. */
  const writeLegacyPolicy = async (req: Request, f: FieldData): Promise<Response | undefined> => {
    const text = f.has('rules') ? f.get<string>('rules') : f.get<string | undefined>('policy');
    if (!text) throw ServiceError.badRequest('missing required field "policy"');
    await writePolicy(req, f.params.name, text);
    return f.has('rules') ? { warnings: ['"rules" is deprecated, use "policy" instead'] } : undefined;
  };

  const capabilitiesOf = async (req: Request, token: TokenEntry, paths: string[]) => {
    const { acl, prefix } = await tokenAcl(core, req, token);
    const result: Record<string, string[]> = {};
    for (const path of paths) {
      const caps = acl.capabilities(prefix + path.replace(/^\/+/, ''));
      result[path] = caps.size === 0 ? ['deny'] : [...caps].sort();
    }
    // As Vault: `capabilities` as well only when one path was asked about (what older clients read).
    return { data: paths.length === 1 ? { ...result, capabilities: result[paths[0]] } : result };
  };

  const pathsField = {
    paths: { type: 'comma-string-list' as const, description: 'Paths to check (required unless path is given).' },
    path: { type: 'comma-string-list' as const, deprecated: true, description: 'Deprecated alias of paths, read when paths is absent or empty.' },
  };
  /** `paths`, or Vault's older `path` when `paths` is absent or empty. */
  const pathsOf = (f: FieldData): string[] => {
    const paths = f.get<string[] | undefined>('paths') ?? [];
    const chosen = paths.length > 0 ? paths : (f.get<string[] | undefined>('path') ?? []);
    if (chosen.length === 0) throw ServiceError.badRequest('missing required field "paths"');
    return chosen;
  };

  return [
    {
      pattern: 'policies/acl/',
      synopsis: 'Lists ACL policies.',
      operations: { list: { summary: 'List ACL policies.', handler: async (req) => listResponse(await store(req).list()) } },
    },
    {
      pattern: 'policies/acl/:name',
      synopsis: 'Reads, writes or deletes an ACL policy.',
      fields: POLICY_FIELDS,
      operations: {
        read: { summary: 'Read an ACL policy.', handler: (req, f) => readPolicy(req, f.params.name, false) },
        update: { summary: 'Create or update an ACL policy.', handler: (req, f) => writePolicy(req, f.params.name, f.get('policy')) },
        delete: { summary: 'Delete an ACL policy.', handler: (req, f) => deletePolicy(req, f.params.name) },
      },
    },
    {
      pattern: 'policy',
      aliases: ['policy/'],
      dataAtTopLevel: true,
      synopsis: 'Lists ACL policies (legacy path).',
      operations: { read: { summary: 'List policies.', handler: legacyList }, list: { summary: 'List policies.', handler: legacyList } },
    },
    {
      pattern: 'policy/:name',
      dataAtTopLevel: true,
      synopsis: 'Reads, writes or deletes an ACL policy (legacy path).',
      fields: {
        // Not required here: `rules` may stand in for it.
        policy: { ...POLICY_FIELDS.policy, required: false },
        rules: { type: 'string', deprecated: true, description: 'Deprecated alias of policy.' },
      },
      operations: {
        read: { summary: 'Read a policy.', handler: (req, f) => readPolicy(req, f.params.name, true) },
        update: { summary: 'Write a policy.', handler: writeLegacyPolicy },
        delete: { summary: 'Delete a policy.', handler: (req, f) => deletePolicy(req, f.params.name) },
      },
    },
    {
      pattern: 'capabilities',
      dataAtTopLevel: true,
      synopsis: 'Capabilities of a token on paths.',
      fields: { token: { type: 'string', sensitive: true, required: true, description: 'The token.' }, ...pathsField },
      operations: {
        update: {
          summary: 'Capabilities of a token.',
          handler: async (req, f) => {
            const paths = pathsOf(f);
            const token = await core.tokens.lookup(f.get('token'));
            if (!token) throw ServiceError.badRequest('invalid token');
            return capabilitiesOf(req, token, paths);
          },
        },
      },
    },
    {
      pattern: 'capabilities-self',
      dataAtTopLevel: true,
      synopsis: 'Capabilities of the calling token on paths.',
      fields: pathsField,
      operations: {
        update: {
          summary: 'Capabilities of the calling token.',
          handler: async (req, f) => {
            const paths = pathsOf(f);
            const token = req.caller?.tokenId ? await core.tokens.lookup(req.caller.tokenId) : null;
            if (!token) throw ServiceError.forbidden();
            return capabilitiesOf(req, token, paths);
          },
        },
      },
    },
    {
      pattern: 'capabilities-accessor',
      dataAtTopLevel: true,
      synopsis: 'Capabilities of a token, by accessor, on paths.',
      fields: { accessor: { type: 'string', required: true, description: 'Accessor of the token.' }, ...pathsField },
      operations: {
        update: {
          summary: 'Capabilities of a token by accessor.',
          handler: async (req, f) => {
            const paths = pathsOf(f);
            const found = await core.tokens.lookupAccessor(f.get('accessor'));
            if (!found) throw ServiceError.badRequest('invalid accessor');
            return capabilitiesOf(req, found.entry, paths);
          },
        },
      },
    },
  ];
}
