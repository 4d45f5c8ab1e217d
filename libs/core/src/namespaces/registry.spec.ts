import { Barrier, InmemPhysical, Keyring } from '@svc/storage';
import { NamespaceRegistry } from './registry';

describe('NamespaceRegistry', () => {
  it('routes requests through the namespaces it had while it loads them again', async () => {
    const barrier = new Barrier(new InmemPhysical());
    barrier.unseal(Keyring.generate());
    const namespaces = new NamespaceRegistry(barrier);
    await namespaces.load('2');
    await namespaces.create(namespaces.root, 'team', {});

    // Another replica changed the namespaces: the reload reads storage while requests keep arriving.
    let reloaded = false;
    const reloading = namespaces.load('2').then(() => (reloaded = true));
    const seen = new Set<string | undefined>();
    while (!reloaded) {
      seen.add(namespaces.resolve('team/secret/x').namespace?.path);
      await Promise.resolve();
    }
    await reloading;
    expect([...seen]).toEqual(['team/']);
    expect(namespaces.resolve('team/secret/x').namespace.path).toBe('team/');
  });
});
