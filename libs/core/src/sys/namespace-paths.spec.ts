import { Backend, type MountInfo } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { MountedBackend, mountStorage, refusal, testMount, unsealedBarrier } from '@svc/testing';
import type { Namespace } from '../namespaces/namespace';
import { NamespaceRegistry } from '../namespaces/registry';
import { namespacePaths } from './namespace-paths';

describe('sys/namespaces', () => {
  let namespaces: NamespaceRegistry;
  /** Paths of the namespaces the core was asked to delete. */
  let deleted: string[];
  let sys: MountedBackend;

  beforeEach(async () => {
    const barrier = unsealedBarrier();
    namespaces = new NamespaceRegistry(barrier);
    await namespaces.load('1');
    deleted = [];
    const paths = namespacePaths({
      namespaces,
      router: {
        namespaceOf: ({ mount }: { mount: MountInfo }) => {
          const namespace = namespaces.get(mount.namespace);
          if (!namespace) throw ServiceError.notFound(`namespace "${mount.namespace}" does not exist`);
          return namespace;
        },
      },
      // The core also revokes the namespace's tokens and leases and purges its mounts first.
      deleteNamespace: async (namespace: Namespace) => {
        deleted.push(namespace.path);
        await namespaces.remove(namespace);
      },
    });
    const mount = testMount('system', { path: 'sys/' });
    sys = new MountedBackend(new Backend({ type: 'system', help: 'sys/namespaces', paths }), mount, mountStorage(mount));
  });

  it('creates a child namespace, reads it and lists it with its details', async () => {
    const created = await sys.write('namespaces/team', { custom_metadata: { owner: 'ops' } });
    expect(created).toEqual({ id: expect.stringMatching(/^\w{6}$/), path: 'team/', custom_metadata: { owner: 'ops' } });
    expect(namespaces.get('team/')?.record.id).toBe(created.id);
    expect(await sys.read('namespaces/team')).toEqual(created);

    await sys.write('namespaces/apps');
    const listed = await sys.request('list', 'namespaces/');
    expect(listed?.data).toEqual({
      keys: ['team/', 'apps/'],
      key_info: { 'team/': created, 'apps/': { id: expect.any(String), path: 'apps/', custom_metadata: {} } },
    });
  });

  it('names namespaces relative to the one the request is made in', async () => {
    await sys.write('namespaces/team');
    const team = sys.inNamespace('team/');
    expect(await team.write('namespaces/apps')).toMatchObject({ path: 'team/apps/' });

    expect(await team.list('namespaces/')).toEqual(['apps/']);
    expect(await team.read('namespaces/apps')).toMatchObject({ path: 'team/apps/' });
    expect(await sys.list('namespaces/')).toEqual(['team/']);
    expect(await sys.read('namespaces/apps')).toBeUndefined();
  });

  it('refuses to change a namespace that exists, and names that are invalid or reserved', async () => {
    await sys.write('namespaces/team', { custom_metadata: { owner: 'ops' } });
    expect(await refusal(sys.write('namespaces/team', { custom_metadata: { owner: 'dev' } }))).toEqual({ status: 400, message: 'namespace "team" already exists' });
    expect(await sys.read('namespaces/team')).toMatchObject({ custom_metadata: { owner: 'ops' } });

    expect(await refusal(sys.write('namespaces/sys'))).toEqual({ status: 400, message: 'invalid namespace name "sys"' });
    expect(await refusal(sys.write('namespaces/.hidden'))).toEqual({ status: 400, message: 'invalid namespace name ".hidden"' });
    expect(await sys.list('namespaces/')).toEqual(['team/']);
  });

  it('deletes a namespace through the core, and succeeds for one that does not exist', async () => {
    await sys.write('namespaces/team');
    expect(await sys.request('delete', 'namespaces/team')).toBeUndefined();
    expect(deleted).toEqual(['team/']);
    expect(await sys.read('namespaces/team')).toBeUndefined();
    expect(await sys.list('namespaces/')).toEqual([]);

    expect(await sys.request('delete', 'namespaces/never')).toBeUndefined();
    expect(deleted).toEqual(['team/']);
  });

  it('passes on the refusal to delete a namespace that has children', async () => {
    await sys.write('namespaces/team');
    await sys.inNamespace('team/').write('namespaces/apps');
    expect(await refusal(sys.request('delete', 'namespaces/team'))).toEqual({ status: 400, message: 'namespace "team/" has child namespaces; delete them first' });
    expect(await sys.list('namespaces/')).toEqual(['team/']);
  });
});
