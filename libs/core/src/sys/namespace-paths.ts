import { listResponse, type PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { Namespace } from '../namespaces/namespace';
import type { NamespaceRegistry } from '../namespaces/registry';
import type { Router } from '../routing/router';

/** What sys/namespaces uses of the core's parts. */
export interface NamespacePathsDeps {
  namespaces: Pick<NamespaceRegistry, 'get' | 'children' | 'create'>;
  /** The namespace a request is made in: the parent of those it names. */
  router: Pick<Router, 'namespaceOf'>;
  /** Revokes a namespace's tokens and leases, then removes its mounts and data. */
  deleteNamespace(namespace: Namespace): Promise<void>;
}

function describe(namespace: Namespace): Record<string, unknown> {
  return { id: namespace.record.id, path: namespace.path, custom_metadata: namespace.record.custom_metadata };
}

/** sys/namespaces: child namespaces of the namespace the request is made in. */
export function namespacePaths(core: NamespacePathsDeps): PathDeclaration[] {
  const child = (parent: Namespace, name: string): Namespace | undefined => core.namespaces.get(`${parent.path}${name}`);
  return [
    {
      pattern: 'namespaces/',
      synopsis: 'Lists the child namespaces.',
      operations: {
        list: {
          summary: 'List child namespaces.',
          handler: async (req) => {
            const children = core.namespaces.children(core.router.namespaceOf(req));
            const names = children.map((ns) => ns.path.slice(core.router.namespaceOf(req).path.length));
            return listResponse(names, Object.fromEntries(children.map((ns, i) => [names[i], describe(ns)])));
          },
        },
      },
    },
    {
      pattern: 'namespaces/:name',
      synopsis: 'Creates, reads or deletes a child namespace.',
      fields: { custom_metadata: { type: 'kv-pairs', default: {}, description: 'Metadata of the namespace.' } },
      existenceCheck: async (req, f) => child(core.router.namespaceOf(req), f.params.name) !== undefined,
      operations: {
        read: {
          summary: 'Read a namespace.',
          handler: async (req, f) => {
            const namespace = child(core.router.namespaceOf(req), f.params.name);
            return namespace ? { data: describe(namespace) } : undefined;
          },
        },
        create: {
          summary: 'Create a namespace.',
          handler: async (req, f) => ({ data: describe(await core.namespaces.create(core.router.namespaceOf(req), f.params.name, f.get('custom_metadata'))) }),
        },
        update: {
          summary: 'Namespaces are immutable once created.',
          handler: async (_req, f) => {
            throw ServiceError.badRequest(`namespace "${f.params.name}" already exists`);
          },
        },
        delete: {
          summary: 'Delete a namespace: its tokens and leases are revoked and its mounts removed.',
          handler: async (req, f) => {
            const namespace = child(core.router.namespaceOf(req), f.params.name);
            if (namespace) await core.deleteNamespace(namespace);
            return undefined;
          },
        },
      },
    },
  ];
}
