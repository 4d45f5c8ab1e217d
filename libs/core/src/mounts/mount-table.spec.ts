import { createView, InmemPhysical, type StorageView } from '@svc/storage';
import { MountTable, type MountEntry } from './mount-table';

const DEFAULTS = { default_lease_ttl: 0, max_lease_ttl: 0 };

describe('MountTable', () => {
  let physical: InmemPhysical;
  let core: StorageView;
  const paths = async (key: string) => ((await core.getJSON<MountEntry[]>(key)) ?? []).map((entry) => entry.path);

  beforeEach(() => {
    physical = new InmemPhysical();
    core = createView(physical, 'core/');
  });

  it('stores local mounts in a table of their own and writes only the table a change touches', async () => {
    const table = new MountTable(core, 'secret', '');
    await table.load();
    await table.mount({ path: 'shared', type: 'kv' }, DEFAULTS);
    await table.mount({ path: 'here', type: 'kv', local: true }, DEFAULTS);
    expect(await paths('mounts')).toEqual(['shared/']);
    expect(await paths('local-mounts')).toEqual(['here/']);

    // Changes are made in transactions (under the table's lock): the keys they write.
    const written: string[] = [];
    const transaction = physical.transaction.bind(physical);
    jest.spyOn(physical, 'transaction').mockImplementation((change) =>
      transaction((tx) =>
        change({
          get: (key) => tx.get(key),
          list: (prefix) => tx.list(prefix),
          lock: (key) => tx.lock(key),
          delete: (key) => tx.delete(key),
          putMeta: (name, value) => tx.putMeta(name, value),
          put: async (key, value) => {
            written.push(key);
            await tx.put(key, value);
          },
        }),
      ),
    );
    await table.remount('here', 'there');
    await table.tune('shared', { description: 'tuned' }, DEFAULTS);
    expect(written).toEqual(['core/local-mounts', 'core/mounts']);

    const reloaded = new MountTable(core, 'secret', '');
    await reloaded.load();
    expect(reloaded.list().map((entry) => [entry.path, entry.local, entry.description])).toEqual([
      ['shared/', false, 'tuned'],
      ['there/', true, ''],
    ]);
  });

  it('keeps what two processes change at once: each change is made to the table as storage holds it', async () => {
    const [first, second] = [new MountTable(core, 'secret', ''), new MountTable(core, 'secret', '')];
    await Promise.all([first.load(), second.load()]);
    await Promise.all([first.mount({ path: 'one', type: 'kv' }, DEFAULTS), second.mount({ path: 'two', type: 'kv' }, DEFAULTS), first.mount({ path: 'three', type: 'kv' }, DEFAULTS)]);
    expect((await paths('mounts')).sort()).toEqual(['one/', 'three/', 'two/']);
    // The second never loaded "one", and still removes it, and refuses a path the first took.
    await second.unmount('one');
    await expect(second.mount({ path: 'three', type: 'kv' }, DEFAULTS)).rejects.toThrow('path is already in use at three/');
    expect((await paths('mounts')).sort()).toEqual(['three/', 'two/']);
  });

  it('matches a path to the mount it falls under, the longest even in a table stored with nested mounts', async () => {
    const table = new MountTable(core, 'secret', '');
    await table.load();
    await table.mount({ path: 'team', type: 'kv' }, DEFAULTS);
    await table.mount({ path: 'team-b/apps', type: 'kv' }, DEFAULTS);
    expect(table.match('team/x/y')?.path).toBe('team/');
    expect(table.match('team-b/apps/z')?.path).toBe('team-b/apps/');
    expect(table.match('team-b/other')).toBeUndefined();
    await expect(table.mount({ path: 'team/inner', type: 'kv' }, DEFAULTS)).rejects.toThrow('path is already in use at team/');

    await core.putJSON('mounts', [
      { path: 'outer/', type: 'kv', uuid: 'u1', accessor: 'kv_1' },
      { path: 'outer/inner/', type: 'kv', uuid: 'u2', accessor: 'kv_2' },
    ]);
    const nested = new MountTable(core, 'secret', '');
    await nested.load();
    expect(nested.match('outer/inner/key')?.path).toBe('outer/inner/');
    expect(nested.match('outer/key')?.path).toBe('outer/');
  });

  it('keeps auth methods apart the same way', async () => {
    const table = new MountTable(core, 'auth', '');
    await table.load();
    await table.mount({ path: 'userpass', type: 'userpass', local: true }, DEFAULTS);
    await table.mount({ path: 'approle', type: 'approle' }, DEFAULTS);
    expect(await paths('auth')).toEqual(['approle/']);
    expect(await paths('local-auth')).toEqual(['userpass/']);
  });

  it('moves local entries stored in the replicated table by an earlier version to the local table with the next change', async () => {
    const legacy = { path: 'old-local/', type: 'kv', uuid: 'u1', accessor: 'kv_1', local: true };
    await core.putJSON('mounts', [legacy]);
    const table = new MountTable(core, 'secret', '');
    await table.load();
    expect(table.get('old-local/')).toMatchObject({ local: true });
    await table.mount({ path: 'new', type: 'kv' }, DEFAULTS);
    expect(await paths('mounts')).toEqual(['new/']);
    expect(await paths('local-mounts')).toEqual(['old-local/']);
  });
});
