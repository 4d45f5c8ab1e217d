import { KvHarness } from './testing/harness';
import { KvRecords } from './v2/records';

const T0 = '2030-01-01T00:00:00.000Z';

describe('kv version 2: metadata', () => {
  let kv: KvHarness;

  beforeEach(() => {
    kv = KvHarness.inmem('2');
  });

  it('reads the metadata of a key with every version', async () => {
    await kv.write('data/m', { data: { v: 1 } });
    kv.clock.advance(10);
    await kv.write('data/m', { data: { v: 2 } });
    await kv.remove('data/m');

    expect(await kv.read('metadata/m')).toEqual({
      status: 200,
      data: {
        cas_required: false,
        created_time: T0,
        current_version: 2,
        custom_metadata: null,
        delete_version_after: '0s',
        max_versions: 0,
        oldest_version: 0,
        updated_time: '2030-01-01T00:00:10.000Z',
        versions: {
          1: { created_time: T0, deletion_time: '', destroyed: false },
          2: { created_time: '2030-01-01T00:00:10.000Z', deletion_time: '2030-01-01T00:00:10.000Z', destroyed: false },
        },
      },
    });
    expect(await kv.read('metadata/none')).toEqual({ status: 404, errors: [] });
  });

  it('writes settings and custom metadata, creating the key without versions', async () => {
    const written = await kv.write('metadata/new', {
      max_versions: 3,
      cas_required: true,
      delete_version_after: 90,
      custom_metadata: { owner: 'team-a', purpose: 'db' },
    });
    expect(written).toEqual({ status: 204 });
    expect((await kv.read('metadata/new')).data).toMatchObject({
      max_versions: 3,
      cas_required: true,
      delete_version_after: '1m30s',
      custom_metadata: { owner: 'team-a', purpose: 'db' },
      current_version: 0,
      versions: {},
    });
    // No version yet: data reads 404, and cas 0 creates the first one.
    expect((await kv.read('data/new')).status).toBe(404);
    const first = await kv.write('data/new', { data: { a: 1 }, options: { cas: 0 } });
    expect(first.data).toMatchObject({ version: 1, custom_metadata: { owner: 'team-a', purpose: 'db' } });

    // A write replaces custom metadata and leaves the settings it does not name.
    await kv.write('metadata/new', { custom_metadata: { owner: 'team-b' } });
    expect((await kv.read('metadata/new')).data).toMatchObject({ max_versions: 3, custom_metadata: { owner: 'team-b' } });
  });

  it('patches metadata: custom metadata merges, null removes a key', async () => {
    await kv.write('data/pm', { data: { a: 1 } });
    await kv.write('metadata/pm', { custom_metadata: { keep: 'k', drop: 'd' } });
    expect(await kv.patch('metadata/pm', { max_versions: 7, custom_metadata: { drop: null, add: 'x' } })).toEqual({ status: 204 });
    expect((await kv.read('metadata/pm')).data).toMatchObject({ max_versions: 7, custom_metadata: { keep: 'k', add: 'x' } });

    expect((await kv.patch('metadata/none', { max_versions: 1 })).status).toBe(404);
    expect((await kv.read('metadata/none')).status).toBe(404);
    expect((await kv.patch('metadata/pm', { max_versions: 1 }, { contentType: 'application/json' })).status).toBe(415);
  });

  it('validates custom metadata without echoing values', async () => {
    const tooMany = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']));
    expect((await kv.write('metadata/cm', { custom_metadata: tooMany })).errors).toEqual([
      'field "custom_metadata": at most 64 keys are allowed, got 65',
    ]);
    const longValue = await kv.write('metadata/cm', { custom_metadata: { k: 'secret-ish'.repeat(60) } });
    expect(longValue.errors).toEqual(['field "custom_metadata": the value of key "k" is longer than 512 characters']);
    expect((await kv.write('metadata/cm', { custom_metadata: { k: 5 } })).errors).toEqual([
      'field "custom_metadata": the value of key "k" is not a string',
    ]);
    expect((await kv.write('metadata/cm', { max_versions: -1 })).errors).toEqual([
      'field "max_versions" must be a non-negative integer',
    ]);
    expect((await kv.write('metadata/cm', { delete_version_after: '-5s' })).status).toBe(400);
    expect((await kv.read('metadata/cm')).status).toBe(404);
  });

  it('deletes the key with every version and its data', async () => {
    await kv.write('data/dir/gone', { data: { v: 1 } });
    await kv.write('data/dir/gone', { data: { v: 2 } });
    expect(await kv.remove('metadata/dir/gone')).toEqual({ status: 204 });
    expect((await kv.read('metadata/dir/gone')).status).toBe(404);
    expect((await kv.read('data/dir/gone', { version: 1 })).status).toBe(404);
    const records = new KvRecords(kv.storage);
    expect(await records.version('dir/gone', 1)).toBeNull();
    expect(await records.version('dir/gone', 2)).toBeNull();
    expect((await kv.list('metadata/dir/')).data).toEqual({ keys: [] });
    // A new write starts again at version 1.
    expect((await kv.write('data/dir/gone', { data: { v: 3 } })).data).toMatchObject({ version: 1 });
  });

  it('lists keys and directories under metadata/', async () => {
    for (const path of ['a', 'dir/b', 'dir/c', 'dir/sub/d']) await kv.write(`data/${path}`, { data: { x: 1 } });
    expect((await kv.list('metadata/')).data).toEqual({ keys: ['a', 'dir/'] });
    expect((await kv.list('metadata')).data).toEqual({ keys: ['a', 'dir/'] });
    expect((await kv.list('metadata/dir/')).data).toEqual({ keys: ['b', 'c', 'sub/'] });
    expect((await kv.list('metadata/dir/sub')).data).toEqual({ keys: ['d'] });
    expect((await kv.list('metadata/nothing/')).data).toEqual({ keys: [] });
  });

  it('tells create from update on metadata/ writes', async () => {
    expect((await kv.write('metadata/caps', { max_versions: 2 }, { capabilities: ['update'] })).status).toBe(403);
    expect((await kv.write('metadata/caps', { max_versions: 2 }, { capabilities: ['create'] })).status).toBe(204);
    expect((await kv.write('metadata/caps', { max_versions: 3 }, { capabilities: ['create'] })).status).toBe(403);
    expect((await kv.write('metadata/caps', { max_versions: 3 }, { capabilities: ['update'] })).status).toBe(204);
    expect((await kv.read('metadata/caps')).data?.max_versions).toBe(3);
  });
});
