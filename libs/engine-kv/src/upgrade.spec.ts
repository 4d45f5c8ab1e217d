import { InmemPhysical, Keyring } from '@svc/storage';
import { KvHarness, kvMount } from './testing/harness';

describe('kv upgrade from version 1 to version 2 in place', () => {
  it('moves version 1 secrets to version 1 of versioned keys when the mount is tuned to version 2', async () => {
    const kv = KvHarness.inmem('1');
    await kv.write('app/db', { password: 'p1' });
    await kv.write('app/deep/er/key', { token: 't' });
    await kv.write('top', { v: 1 });

    kv.tune('2');
    expect(await kv.read('data/app/db')).toEqual({
      status: 200,
      data: {
        data: { password: 'p1' },
        metadata: { created_time: kv.clock.time.toISOString(), custom_metadata: null, deletion_time: '', destroyed: false, version: 1 },
      },
    });
    expect((await kv.read('data/app/deep/er/key')).data?.data).toEqual({ token: 't' });
    expect((await kv.list('metadata/')).data).toEqual({ keys: ['app/', 'top'] });
    expect((await kv.list('metadata/app/')).data).toEqual({ keys: ['db', 'deep/'] });
    expect((await kv.read('metadata/top')).data).toMatchObject({ current_version: 1 });

    // Writing continues the history, with check-and-set against the upgraded version.
    expect((await kv.write('data/top', { data: { v: 2 }, options: { cas: 1 } })).data).toMatchObject({ version: 2 });
    // Version 1 paths are gone: "top" is now under data/.
    expect((await kv.read('top')).status).toBe(404);
  });

  it('upgrades once even when replicas race, and a second backend on the same storage sees the result', async () => {
    const physical = new InmemPhysical();
    const keyring = Keyring.generate();
    const mount = kvMount('1');
    const first = KvHarness.over(physical, keyring, mount);
    for (let i = 0; i < 20; i++) await first.write(`k${i}`, { i });

    mount.options = { version: '2' };
    const second = KvHarness.over(physical, keyring, mount);
    const reads = await Promise.all([
      ...Array.from({ length: 10 }, (_, i) => first.read(`data/k${i}`)),
      ...Array.from({ length: 10 }, (_, i) => second.read(`data/k${10 + i}`)),
    ]);
    expect(reads.map((read) => read.data?.data)).toEqual(Array.from({ length: 20 }, (_, i) => ({ i })));
    expect(((await second.list('metadata/')).data?.keys as string[]).length).toBe(20);
    expect((await first.read('metadata/k3')).data).toMatchObject({ current_version: 1, versions: { 1: { destroyed: false } } });
  });

  it('a mount created as version 2 needs no data to upgrade', async () => {
    const kv = KvHarness.inmem('2');
    expect((await kv.write('data/x', { data: { a: 1 } })).data).toMatchObject({ version: 1 });
  });

  it('refuses version 1 requests once the mount holds version 2 data, on every replica', async () => {
    const physical = new InmemPhysical();
    const keyring = Keyring.generate();
    const mount = kvMount('1');
    const kv = KvHarness.over(physical, keyring, mount);
    await kv.write('s', { v: 1 });
    kv.tune('2');
    expect((await kv.read('data/s')).status).toBe(200);

    kv.tune('1');
    const refused = await kv.read('s');
    expect(refused.status).toBe(400);
    expect(refused.errors?.[0]).toMatch(/upgraded to version 2 and cannot be used as version 1/);
    expect((await kv.write('s', { v: 2 })).status).toBe(400);
    const otherReplica = KvHarness.over(physical, keyring, mount);
    expect((await otherReplica.list('')).status).toBe(400);

    kv.tune('2');
    expect((await kv.read('data/s')).data?.data).toEqual({ v: 1 });
  });
});
