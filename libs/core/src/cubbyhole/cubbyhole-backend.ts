import { Backend, listResponse, type Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { mountStoragePrefix } from '@svc/engine-host';
import { createView, type Barrier, type StorageView } from '@svc/storage';
import { deleteTree } from '../mounts/mount-data';
import type { NamespaceRegistry } from '../namespaces/registry';

/** Each token's private storage: the mount's view narrowed to the calling token's accessor. */
function ownStorage(storage: StorageView, req: Request): StorageView {
  const accessor = req.caller?.tokenAccessor;
  if (!accessor) throw ServiceError.badRequest('cubbyhole is not available to batch tokens');
  return storage.sub(`${accessor}/`);
}

/**
 * cubbyhole/: a key/value store private to each token, destroyed with it. No policy can let one
 * token see another's cubbyhole: the token, not the path, selects the storage.
 */
export function createCubbyholeBackend(storage: StorageView): Backend {
  return new Backend({
    type: 'cubbyhole',
    help: 'Per-token private secret storage. Data is visible only to the token that wrote it and is deleted when the token is revoked.',
    paths: [
      {
        pattern: '',
        synopsis: 'Lists the top level of the calling token\'s cubbyhole.',
        operations: { list: { summary: 'List keys.', handler: async (req) => listResponse(await ownStorage(storage, req).list('')) } },
      },
      {
        pattern: '*path',
        synopsis: 'Reads, writes, lists or deletes a secret in the calling token\'s cubbyhole.',
        acceptsAnyFields: true,
        existenceCheck: async (req, f) => (await ownStorage(storage, req).get(f.params.path)) !== null,
        operations: {
          read: {
            summary: 'Read a secret.',
            handler: async (req, f) => {
              const data = await ownStorage(storage, req).getJSON<Record<string, unknown>>(f.params.path);
              return data ? { data } : undefined;
            },
          },
          list: {
            summary: 'List keys under a directory.',
            handler: async (req, f) => listResponse(await ownStorage(storage, req).list(f.params.path.endsWith('/') ? f.params.path : `${f.params.path}/`)),
          },
          create: { summary: 'Write a secret.', handler: (req, f) => write(ownStorage(storage, req), f.params.path, f.raw) },
          update: { summary: 'Write a secret.', handler: (req, f) => write(ownStorage(storage, req), f.params.path, f.raw) },
          delete: {
            summary: 'Delete a secret.',
            handler: async (req, f) => {
              await ownStorage(storage, req).delete(f.params.path);
              return undefined;
            },
          },
        },
      },
    ],
  });
}

async function write(own: StorageView, path: string, data: Record<string, unknown>): Promise<undefined> {
  if (path.endsWith('/')) throw ServiceError.badRequest('cannot write to a directory path');
  if (Object.keys(data).length === 0) throw ServiceError.badRequest('missing data fields');
  await own.putJSON(path, data);
  return undefined;
}

/** A revoked token's cubbyholes go with it, in every namespace. */
export async function purgeCubbyholes(barrier: Barrier, namespaces: Pick<NamespaceRegistry, 'all'>, accessor: string): Promise<void> {
  for (const namespace of namespaces.all()) {
    const cubbyhole = namespace.secretMounts.get('cubbyhole/');
    if (cubbyhole) await deleteTree(createView(barrier, mountStoragePrefix(cubbyhole)).sub(`${accessor}/`), '');
  }
}
