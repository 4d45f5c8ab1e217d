import { unsealedBarrier } from '@svc/testing';
import { NamespaceRegistry } from './registry';

const DEFAULTS = { default_lease_ttl: 0, max_lease_ttl: 0 };

/** A registry over fresh storage, loaded once (the root namespace and its built-in mounts). */
async function loadedRegistry(): Promise<NamespaceRegistry> {
  const namespaces = new NamespaceRegistry(unsealedBarrier());
  await namespaces.load('2');
  return namespaces;
}

describe('NamespaceRegistry', () => {
  it('routes requests through the namespaces it had while it loads them again', async () => {
    const namespaces = await loadedRegistry();
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

describe('NamespaceRegistry reloads', () => {
  it('keep a change made here while they read storage, however the two interleave', async () => {
    const namespaces = await loadedRegistry();
    await namespaces.root.secretMounts.mount({ path: 'm', type: 'kv', description: 'd0' }, DEFAULTS);
    for (let ticks = 0; ticks < 60; ticks++) {
      const description = `d${ticks + 1}`;
      const reloading = namespaces.load('2');
      for (let tick = 0; tick < ticks; tick++) await Promise.resolve();
      // A request that routed before the reload swapped anything in tunes the mount through the table it found.
      await namespaces.resolve('m/x').namespace.secretMounts.tune('m/', { description }, DEFAULTS);
      await reloading;
      expect({ ticks, description: namespaces.root.secretMounts.get('m/')?.description }).toEqual({ ticks, description });
    }
  });
});
