import { errorOf, ServiceError } from '@svc/api-contract';
import type { ForwardCall } from '@svc/replication';
import type { ReplicaAnnouncer } from '../cluster/cache-coherence';
import type { IdentityStore } from '../identity/identity-store';
import { SYSTEM_MOUNT } from '../mounts/system-mount';
import type { Namespace } from '../namespaces/namespace';
import type { NamespaceRegistry } from '../namespaces/registry';
import type { Router } from '../routing/router';
import { decodeForwardedRequest, encodeForwardedReply } from './forwarding';

export interface ForwardedCallsDeps {
  namespaces: Pick<NamespaceRegistry, 'get'>;
  router: Pick<Router, 'dispatch' | 'handleSystem' | 'mountByUuid'>;
  identity(namespace: Namespace): Pick<IdentityStore, 'loginEntity'>;
  replicas: Pick<ReplicaAnnouncer, 'hasPending' | 'flush'>;
}

/**
 * On a performance primary: serves a write a secondary forwarded, run as the caller the secondary
 * authenticated and authorized (see forwarding.ts); its failure is its answer.
 */
export function forwardedCallServer(deps: ForwardedCallsDeps): (call: ForwardCall, body: Record<string, unknown>) => Promise<Record<string, unknown>> {
  const namespaceAt = (path: unknown): Namespace => {
    const namespace = typeof path === 'string' ? deps.namespaces.get(path) : undefined;
    if (!namespace) throw ServiceError.badRequest(`namespace ${JSON.stringify(path)} does not exist on the primary`);
    return namespace;
  };
  return async (call, body) => {
    try {
      if (call === 'login-entity') {
        const groupAliases = Array.isArray(body.group_aliases) ? body.group_aliases.map(String) : undefined;
        const entity = await deps.identity(namespaceAt(body.namespace)).loginEntity(String(body.mount_accessor), String(body.name), (body.metadata ?? {}) as Record<string, string>, groupAliases);
        return { ok: true, entity };
      }
      const message = decodeForwardedRequest(body, (namespace, uuid) => deps.router.mountByUuid(namespace, uuid));
      return encodeForwardedReply(await (message.mount.uuid === SYSTEM_MOUNT.uuid ? deps.router.handleSystem(message) : deps.router.dispatch(message)));
    } catch (err) {
      return { ok: false, ...errorOf(err) };
    } finally {
      // As after a request: the other gateway replicas hear of the writes before the secondary does.
      if (deps.replicas.hasPending) await deps.replicas.flush();
    }
  };
}
