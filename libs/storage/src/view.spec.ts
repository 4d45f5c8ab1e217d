import { Barrier } from './barrier';
import { InmemPhysical } from './inmem';
import { Keyring } from './keyring';
import type { StorageView } from './types';
import { createView } from './view';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

describe('StorageView', () => {
  let barrier: Barrier;
  let view: StorageView;

  beforeEach(() => {
    barrier = new Barrier(new InmemPhysical());
    barrier.unseal(Keyring.generate());
    view = createView(barrier, 'logical/mount-a/');
  });

  it('stores under its prefix and sees nothing outside it', async () => {
    await view.put('config', bytes('a'));
    await barrier.put('logical/mount-b/config', bytes('b'));
    expect(view.prefix).toBe('logical/mount-a/');
    expect(await barrier.get('logical/mount-a/config')).toEqual(bytes('a'));
    expect(await view.get('config')).toEqual(bytes('a'));
    expect(await createView(barrier, 'logical/mount-b/').get('config')).toEqual(bytes('b'));
    await view.delete('config');
    expect(await barrier.get('logical/mount-a/config')).toBeNull();
    expect(await barrier.get('logical/mount-b/config')).toEqual(bytes('b'));
  });

  it('lists names relative to the view', async () => {
    await view.put('roles/admin', bytes('1'));
    await view.put('roles/dev/nested', bytes('1'));
    await view.put('top', bytes('1'));
    expect(await view.list('')).toEqual(['roles/', 'top']);
    expect(await view.list('roles/')).toEqual(['admin', 'dev/']);
  });

  it('narrows with sub()', async () => {
    const roles = view.sub('roles/');
    expect(roles.prefix).toBe('logical/mount-a/roles/');
    await roles.putJSON('admin', { ttl: 60, policies: ['root'] });
    expect(await view.getJSON('roles/admin')).toEqual({ ttl: 60, policies: ['root'] });
    expect(await roles.list('')).toEqual(['admin']);
    expect(await roles.getJSON('missing')).toBeNull();
  });

  it('rejects keys and prefixes that could leave the view, naming the problem', async () => {
    const rejected = (problem: string) => ({ kind: 'bad-request', message: expect.stringContaining(problem) });
    await expect(view.get('../mount-b/config')).rejects.toMatchObject(rejected("'..' segments are not allowed"));
    await expect(view.put('a/../../b', bytes('x'))).rejects.toMatchObject(rejected("'..' segments are not allowed"));
    await expect(view.delete('/etc')).rejects.toMatchObject(rejected("it must not start with '/'"));
    await expect(view.get('a//b')).rejects.toMatchObject(rejected('empty segments are not allowed'));
    await expect(view.get('')).rejects.toMatchObject(rejected('it is empty'));
    await expect(view.list('../')).rejects.toMatchObject(rejected("'..' segments are not allowed"));
    await expect(view.list('roles')).rejects.toMatchObject(rejected("it must be empty or end in '/'"));
    expect(() => view.sub('../')).toThrow("'..' segments are not allowed");
    expect(() => createView(barrier, '/logical/')).toThrow("it must not start with '/'");
    expect(await barrier.list('logical/')).toEqual([]);
  });

  it('accepts names that merely contain dots', async () => {
    await view.put('a..b/.hidden', bytes('x'));
    expect(await view.list('a..b/')).toEqual(['.hidden']);
  });

  it('scopes transactions to its prefix, rolling back on error', async () => {
    await view.transaction(async (tx) => {
      await tx.lock('counter');
      await tx.put('counter', bytes('1'));
      expect(await tx.list('')).toEqual(['counter']);
    });
    expect(await barrier.get('logical/mount-a/counter')).toEqual(bytes('1'));

    await expect(
      view.transaction(async (tx) => {
        await tx.put('counter', bytes('2'));
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect(await view.get('counter')).toEqual(bytes('1'));
    await expect(view.transaction((tx) => tx.get('../x'))).rejects.toMatchObject({ kind: 'bad-request' });
  });

  it('answers 503 while the barrier is sealed', async () => {
    barrier.seal();
    await expect(view.get('config')).rejects.toMatchObject({ kind: 'sealed' });
  });
});
