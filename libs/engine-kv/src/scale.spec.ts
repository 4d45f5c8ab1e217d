import { InmemPhysical, Keyring } from '@svc/storage';
import { KvHarness, kvMount } from './testing/harness';
import { plainStore } from './v1/plain-store';

const KEY_COUNT = 100_000;
const BATCH = 10_000;

/** Counts what reaches the physical store, to show a LIST reads one directory and no values. */
class CountingPhysical extends InmemPhysical {
  gets = 0;
  lists = 0;

  override async get(key: string): Promise<Buffer | null> {
    this.gets += 1;
    return super.get(key);
  }

  override async list(prefix: string): Promise<string[]> {
    this.lists += 1;
    return super.list(prefix);
  }

  reset(): void {
    this.gets = 0;
    this.lists = 0;
  }
}

const keyName = (i: number): string => `key-${String(i).padStart(6, '0')}`;

describe('kv at scale', () => {
  it('lists a directory of 100,000 keys with one directory listing, before and after the upgrade to version 2', async () => {
    const physical = new CountingPhysical();
    const kv = KvHarness.over(physical, Keyring.generate(), kvMount('1'));
    const plain = plainStore(kv.storage);
    for (let start = 0; start < KEY_COUNT; start += BATCH) {
      await plain.transaction(async (tx) => {
        for (let i = start; i < start + BATCH; i++) await tx.put(`big/${keyName(i)}`, Buffer.from(`{"i":${i}}`));
      });
    }
    const expected = Array.from({ length: KEY_COUNT }, (_, i) => keyName(i));

    physical.reset();
    const v1List = await kv.list('big/');
    expect(v1List.data?.keys).toEqual(expected);
    // One read of the upgrade marker (is this mount still version 1?) and one listing.
    expect({ gets: physical.gets, lists: physical.lists }).toEqual({ gets: 1, lists: 1 });

    kv.tune('2');
    expect((await kv.read('data/big/key-054321')).data?.data).toEqual({ i: 54321 });

    physical.reset();
    const v2List = await kv.list('metadata/big/');
    expect(v2List.data?.keys).toEqual(expected);
    expect({ gets: physical.gets, lists: physical.lists }).toEqual({ gets: 0, lists: 1 });
  }, 120_000);

  it('serves 50-segment paths in both versions', async () => {
    const segments = Array.from({ length: 50 }, (_, i) => `level${i}`);
    const deep = segments.join('/');
    const parent = segments.slice(0, -1).join('/');

    const v1 = KvHarness.inmem('1');
    expect(await v1.write(deep, { v: 1 })).toEqual({ status: 204 });
    expect((await v1.read(deep)).data).toEqual({ v: 1 });
    expect((await v1.list(`${parent}/`)).data).toEqual({ keys: ['level49'] });

    const v2 = KvHarness.inmem('2');
    expect((await v2.write(`data/${deep}`, { data: { v: 1 } })).status).toBe(200);
    expect((await v2.write(`data/${deep}`, { data: { v: 2 } })).data).toMatchObject({ version: 2 });
    expect((await v2.read(`data/${deep}`, { version: 1 })).data?.data).toEqual({ v: 1 });
    expect((await v2.list(`metadata/${parent}/`)).data).toEqual({ keys: ['level49'] });
    expect((await v2.list('metadata/')).data).toEqual({ keys: ['level0/'] });
    expect(await v2.remove(`metadata/${deep}`)).toEqual({ status: 204 });
    expect((await v2.read(`data/${deep}`)).status).toBe(404);

    // The upgrade carries deep paths over.
    v1.tune('2');
    expect((await v1.read(`data/${deep}`)).data?.data).toEqual({ v: 1 });
  });
});
