import { ServiceError } from '@svc/api-contract';
import type { SyncPathsDeps } from '@svc/sync-model';
import type { Authorizer } from '../access/authorizer';
import type { Router } from '../routing/router';
import type { TokenStore } from '../tokens/token-store';

/** The parts of the core sys/sync is given through its port. */
export interface SyncPortDeps {
  barrier: SyncPathsDeps['barrier'];
  router: Pick<Router, 'namespaceOf' | 'dispatch' | 'baseMessage'>;
  tokens: Pick<TokenStore, 'lookupAccessor'>;
  authorizer: Pick<Authorizer, 'capabilities'>;
}

/** What the secret sync feature's sys/ paths need of the core, from the core's parts. */
export function syncPort(core: SyncPortDeps): SyncPathsDeps {
  return {
    barrier: core.barrier,
    secretMount: (req, path) => core.router.namespaceOf(req).secretMounts.get(path),
    mayRead: async (req, path) => {
      const token = req.caller ? (await core.tokens.lookupAccessor(req.caller.tokenAccessor, true))?.entry : undefined;
      if (!token) return false;
      try {
        const capabilities = await core.authorizer.capabilities({ token, namespace: core.router.namespaceOf(req), path, operation: 'read', data: {} });
        return capabilities.has('read') || capabilities.has('root');
      } catch (err) {
        // A token outside the namespace, or refused by an entity's state: no read, as no capability.
        if (err instanceof ServiceError && err.kind === 'permission-denied') return false;
        throw err;
      }
    },
    readThrough: (req, mount, path) => core.router.dispatch({ kind: 'operation', ...core.router.baseMessage(req), capabilities: ['root'], mount, path, operation: 'read' }),
  };
}
