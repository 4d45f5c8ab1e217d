import { ServiceError } from '@svc/api-contract';
import { createView, type Barrier } from '@svc/storage';
import type { LeaseLifecycle } from '../leases/lease-lifecycle';
import { deleteTree, type MountData } from '../mounts/mount-data';
import type { TokenManager } from '../tokens/token-manager';
import type { TokenStore } from '../tokens/token-store';
import { Namespace } from './namespace';
import type { NamespaceRegistry } from './registry';

export interface NamespaceRemovalDeps {
  namespaces: Pick<NamespaceRegistry, 'children' | 'remove'>;
  leaseLifecycle: Pick<LeaseLifecycle, 'revokeUnder'>;
  tokens: Pick<TokenStore, 'allAccessors' | 'lookupAccessor'>;
  tokenManager: Pick<TokenManager, 'revokeTree'>;
  mountData: Pick<MountData, 'purge'>;
  barrier: Barrier;
}

/** Deletes a namespace: its tokens and leases are revoked, its mounts and data removed. */
export function namespaceRemoval(deps: NamespaceRemovalDeps): (namespace: Namespace) => Promise<void> {
  return async (namespace) => {
    if (deps.namespaces.children(namespace).length > 0) {
      throw ServiceError.badRequest(`namespace "${namespace.path}" has child namespaces; delete them first`);
    }
    await deps.leaseLifecycle.revokeUnder(namespace, '', true);
    for (const accessor of await deps.tokens.allAccessors()) {
      const found = await deps.tokens.lookupAccessor(accessor);
      if (found?.entry.namespace === namespace.path) await deps.tokenManager.revokeTree(accessor);
    }
    for (const { mount } of namespace.allMounts()) await deps.mountData.purge(mount);
    await deps.namespaces.remove(namespace);
    await deleteTree(createView(deps.barrier, Namespace.storagePrefix(namespace.record)), '');
  };
}
