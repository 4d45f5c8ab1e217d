import type { PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/http';
import type { Core } from '../core';
import { describeMount } from './mount-paths';
import { tokenAcl } from './policy-paths';

/** Path prefix that every token may read; the handler checks access to the mount itself. */
export const MOUNT_PREFLIGHT_PREFIX = 'sys/internal/ui/mounts/';

/**
 * sys/internal/ui/mounts/PATH: the mount that serves PATH (its type and options, e.g. kv version),
 * for a token that has some capability inside that mount. Clients such as `svc kv` ask it which
 * kv version a path is before building the request, as Vault's CLI does.
 */
export function internalUiPaths(core: Core): PathDeclaration[] {
  return [
    {
      pattern: 'internal/ui/mounts/*path',
      dataAtTopLevel: true,
      synopsis: 'The secrets engine or auth method mounted at a path, for a token with access to it.',
      operations: {
        read: {
          summary: 'Read the mount serving a path.',
          handler: async (req, f) => {
            const token = req.caller?.tokenId ? await core.tokens.lookup(req.caller.tokenId) : null;
            if (!token) throw ServiceError.forbidden();
            const namespace = core.namespaceOf(req);
            const path = f.params.path.replace(/^\/+/, '');
            const table = path.startsWith('auth/') ? namespace.authMounts : namespace.secretMounts;
            const entry = table.match(path.startsWith('auth/') ? path.slice('auth/'.length) : path.endsWith('/') ? path : `${path}/`);
            const mountPath = entry && (path.startsWith('auth/') ? `auth/${entry.path}` : entry.path);
            const { acl, prefix } = await tokenAcl(core, req, token);
            if (!entry || !acl.hasMountAccess(prefix + mountPath)) {
              throw ServiceError.forbidden(`preflight capability check returned 403, please ensure client's policies grant access to path "${path}"`);
            }
            return { data: { ...describeMount(entry), path: mountPath } };
          },
        },
      },
    },
  ];
}
