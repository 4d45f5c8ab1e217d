import { CachedPhysical } from './cache';
import { InmemPhysical } from './inmem';

/** An in-memory store that counts reads reaching it, to see what the cache serves. */
class CountingPhysical extends InmemPhysical {
  reads = 0;
  override async get(key: string): Promise<Buffer | null> {
    this.reads++;
    return super.get(key);
  }
}

describe('CachedPhysical', () => {
  it('serves repeated reads (values and misses) from memory', async () => {
    const inner = new CountingPhysical();
    const cache = new CachedPhysical(inner);
    await inner.put('a', Buffer.from('1'));
    expect((await cache.get('a'))?.toString()).toBe('1');
    expect((await cache.get('a'))?.toString()).toBe('1');
    expect(await cache.get('missing')).toBeNull();
    expect(await cache.get('missing')).toBeNull();
    expect(inner.reads).toBe(2);
  });

  it('sees its own writes, in and out of transactions, and forgets a rolled-back one', async () => {
    const inner = new CountingPhysical();
    const cache = new CachedPhysical(inner);
    await cache.get('k');
    await cache.put('k', Buffer.from('v1'));
    expect((await cache.get('k'))?.toString()).toBe('v1');
    await cache.transaction(async (tx) => {
      await tx.lock('k');
      expect((await tx.get('k'))?.toString()).toBe('v1');
      await tx.put('k', Buffer.from('v2'));
    });
    expect((await cache.get('k'))?.toString()).toBe('v2');
    await expect(
      cache.transaction(async (tx) => {
        await tx.put('k', Buffer.from('never'));
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect((await cache.get('k'))?.toString()).toBe('v2');
    await cache.delete('k');
    expect(await cache.get('k')).toBeNull();
  });

  it('reads storage again for keys invalidated by another writer', async () => {
    const inner = new CountingPhysical();
    const cache = new CachedPhysical(inner);
    await cache.put('shared', Buffer.from('old'));
    await inner.put('shared', Buffer.from('new')); // another replica's write
    expect((await cache.get('shared'))?.toString()).toBe('old');
    cache.invalidate(['shared']);
    expect((await cache.get('shared'))?.toString()).toBe('new');
  });

  it('keeps no value a read in flight brought when the key was invalidated meanwhile', async () => {
    const inner = new CountingPhysical();
    const cache = new CachedPhysical(inner);
    await inner.put('shared', Buffer.from('old'));
    // The read leaves before another replica's write commits and comes back after its invalidation.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const get = inner.get.bind(inner);
    jest.spyOn(inner, 'get').mockImplementationOnce(async (key) => {
      const value = await get(key);
      await held;
      return value;
    });
    const inFlight = cache.get('shared');
    await inner.put('shared', Buffer.from('new'));
    cache.invalidate(['shared']);
    release();
    expect((await inFlight)?.toString()).toBe('old');
    expect((await cache.get('shared'))?.toString()).toBe('new');
  });

  it.each(['transaction', 'put', 'delete'] as const)('forgets a key its own %s changed while another key was invalidated', async (how) => {
    const inner = new CountingPhysical();
    const cache = new CachedPhysical(inner);
    await inner.put('token', Buffer.from('live'));
    expect((await cache.get('token'))?.toString()).toBe('live');
    // Another replica's invalidation (of any key) arrives while this write is under way.
    const change = async (write: (key: string) => Promise<void>) => {
      const written = write('token');
      cache.invalidate(['elsewhere']);
      await written;
    };
    if (how === 'transaction') await change((key) => cache.transaction((tx) => tx.delete(key)));
    if (how === 'put') await change((key) => cache.put(key, Buffer.from('revoked')));
    if (how === 'delete') await change((key) => cache.delete(key));
    expect((await cache.get('token'))?.toString()).toBe((await inner.get('token'))?.toString());
  });

  it('stays within its bound', async () => {
    const inner = new CountingPhysical();
    const cache = new CachedPhysical(inner, 2);
    for (const key of ['a', 'b', 'c']) await cache.get(key);
    inner.reads = 0;
    await cache.get('a');
    expect(inner.reads).toBe(1);
  });
});
