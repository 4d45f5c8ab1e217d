import { KvHarness } from './testing/harness';
import { KvRecords } from './v2/records';

const T0 = '2030-01-01T00:00:00.000Z';

describe('kv version 2: data, versions and check-and-set', () => {
  let kv: KvHarness;

  beforeEach(() => {
    kv = KvHarness.inmem('2');
  });

  it('writes versions and reads the latest or a chosen one', async () => {
    expect(await kv.write('data/app', { data: { password: 'one' } })).toEqual({
      status: 200,
      data: { created_time: T0, custom_metadata: null, deletion_time: '', destroyed: false, version: 1 },
    });
    kv.clock.advance(60);
    expect((await kv.write('data/app', { data: { password: 'two' } })).data).toMatchObject({ version: 2 });

    expect(await kv.read('data/app')).toEqual({
      status: 200,
      data: {
        data: { password: 'two' },
        metadata: { created_time: '2030-01-01T00:01:00.000Z', custom_metadata: null, deletion_time: '', destroyed: false, version: 2 },
      },
    });
    expect((await kv.read('data/app', { version: 1 })).data?.data).toEqual({ password: 'one' });
    expect((await kv.read('data/app', { version: '0' })).data?.data).toEqual({ password: 'two' });
    expect(await kv.read('data/app', { version: 3 })).toEqual({ status: 404, errors: [] });
    expect(await kv.read('data/missing')).toEqual({ status: 404, errors: [] });
  });

  it('check-and-set: 0 only creates, a stale version is refused, the current one succeeds', async () => {
    expect((await kv.write('data/cas', { data: { v: 1 }, options: { cas: 0 } })).status).toBe(200);
    expect(await kv.write('data/cas', { data: { v: 2 }, options: { cas: 0 } })).toEqual({
      status: 400,
      errors: ['check-and-set parameter did not match the current version'],
    });
    expect((await kv.write('data/cas', { data: { v: 2 }, options: { cas: 1 } })).data).toMatchObject({ version: 2 });
    expect((await kv.write('data/cas', { data: { v: 3 }, options: { cas: 1 } })).status).toBe(400);
    expect((await kv.read('data/cas')).data?.data).toEqual({ v: 2 });
  });

  it('enforces cas_required from the mount config and from key metadata', async () => {
    expect(await kv.write('config', { cas_required: true })).toEqual({ status: 204 });
    expect(await kv.write('data/strict', { data: { v: 1 } })).toEqual({
      status: 400,
      errors: ['check-and-set parameter required for this call'],
    });
    expect((await kv.write('data/strict', { data: { v: 1 }, options: { cas: 0 } })).status).toBe(200);

    await kv.write('config', { cas_required: false });
    expect((await kv.write('data/loose', { data: { v: 1 } })).status).toBe(200);
    await kv.write('metadata/loose', { cas_required: true });
    expect((await kv.write('data/loose', { data: { v: 2 } })).errors).toEqual(['check-and-set parameter required for this call']);
    expect((await kv.write('data/loose', { data: { v: 2 }, options: { cas: 1 } })).status).toBe(200);
  });

  it('patches the latest version with a JSON merge patch', async () => {
    await kv.write('data/p', { data: { keep: 'k', drop: 'd', nested: { a: 1, b: 2 } } });
    const patched = await kv.patch('data/p', { data: { drop: null, added: 'x', nested: { b: null, c: 3 } } });
    expect(patched.status).toBe(200);
    expect(patched.data).toMatchObject({ version: 2 });
    expect((await kv.read('data/p')).data?.data).toEqual({ keep: 'k', added: 'x', nested: { a: 1, c: 3 } });

    expect((await kv.patch('data/p', { data: { x: 1 }, options: { cas: 1 } })).errors).toEqual([
      'check-and-set parameter did not match the current version',
    ]);
    expect((await kv.patch('data/p', { data: { x: 1 }, options: { cas: 2 } })).data).toMatchObject({ version: 3 });
  });

  it('refuses PATCH without the merge-patch content type, on a missing key and on a deleted latest version', async () => {
    await kv.write('data/p', { data: { a: 1 } });
    expect(await kv.patch('data/p', { data: { a: 2 } }, { contentType: 'application/json' })).toEqual({
      status: 415,
      errors: ['PATCH requires Content-Type "application/merge-patch+json"'],
    });
    expect((await kv.patch('data/p', { data: { a: 2 } }, { contentType: 'application/merge-patch+json; charset=utf-8' })).status).toBe(200);
    expect((await kv.patch('data/none', { data: { a: 1 } })).status).toBe(404);
    await kv.remove('data/p');
    expect((await kv.patch('data/p', { data: { a: 3 } })).status).toBe(404);
    expect((await kv.read('metadata/p')).data?.current_version).toBe(2);
  });

  it('soft-deletes the latest version; a deleted version reads as 404 with its metadata; undelete restores it', async () => {
    await kv.write('data/d', { data: { v: 1 } });
    await kv.write('data/d', { data: { v: 2 } });
    kv.clock.advance(5);
    expect(await kv.remove('data/d')).toEqual({ status: 204 });

    expect(await kv.read('data/d')).toEqual({
      status: 404,
      data: {
        data: null,
        metadata: { created_time: T0, custom_metadata: null, deletion_time: '2030-01-01T00:00:05.000Z', destroyed: false, version: 2 },
      },
    });
    expect((await kv.read('data/d', { version: 1 })).data?.data).toEqual({ v: 1 });

    expect(await kv.write('undelete/d', { versions: [2] })).toEqual({ status: 204 });
    expect((await kv.read('data/d')).data?.data).toEqual({ v: 2 });
  });

  it('deletes, undeletes and destroys chosen versions', async () => {
    for (const v of [1, 2, 3]) await kv.write('data/multi', { data: { v } });

    expect(await kv.write('delete/multi', { versions: [1, 3, 9] })).toEqual({ status: 204 });
    expect((await kv.read('data/multi', { version: 1 })).status).toBe(404);
    expect((await kv.read('data/multi', { version: 2 })).status).toBe(200);
    expect((await kv.read('data/multi', { version: 3 })).status).toBe(404);

    expect(await kv.write('undelete/multi', { versions: '1' })).toEqual({ status: 204 });
    expect((await kv.read('data/multi', { version: 1 })).data?.data).toEqual({ v: 1 });

    expect(await kv.write('destroy/multi', { versions: [2, 3] })).toEqual({ status: 204 });
    const destroyed = await kv.read('data/multi', { version: 2 });
    expect(destroyed.status).toBe(404);
    expect(destroyed.data).toMatchObject({ data: null, metadata: { destroyed: true, version: 2 } });
    // The data is gone from storage, not just hidden.
    expect(await new KvRecords(kv.storage).version('multi', 2)).toBeNull();
    expect(await new KvRecords(kv.storage).version('multi', 1)).toEqual({ v: 1 });
    // A destroyed version cannot come back.
    await kv.write('undelete/multi', { versions: [2, 3] });
    expect((await kv.read('data/multi', { version: 2 })).status).toBe(404);
    expect((await kv.read('data/multi', { version: 3 })).data?.metadata).toMatchObject({ destroyed: true });

    const versions = (await kv.read('metadata/multi')).data?.versions as Record<string, { destroyed: boolean }>;
    expect(Object.fromEntries(Object.entries(versions).map(([n, state]) => [n, state.destroyed]))).toEqual({
      1: false,
      2: true,
      3: true,
    });
    // Acting on a missing key is not an error, as in Vault.
    expect(await kv.write('destroy/none', { versions: [1] })).toEqual({ status: 204 });
  });

  it('requires versions for delete, undelete and destroy', async () => {
    for (const verb of ['delete', 'undelete', 'destroy']) {
      expect(await kv.write(`${verb}/x`, {})).toEqual({ status: 400, errors: ['missing required field "versions"'] });
      expect((await kv.write(`${verb}/x`, { versions: [] })).errors).toEqual(['field "versions" must name at least one version']);
      expect((await kv.write(`${verb}/x`, { versions: [-1] })).status).toBe(400);
    }
  });

  it('prunes the oldest versions beyond max_versions (mount default 10, config, key metadata)', async () => {
    for (let v = 1; v <= 12; v++) await kv.write('data/many', { data: { v } });
    let metadata = (await kv.read('metadata/many')).data!;
    expect(Object.keys(metadata.versions as object).map(Number)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(metadata).toMatchObject({ current_version: 12, oldest_version: 3 });
    expect((await kv.read('data/many', { version: 2 })).status).toBe(404);

    await kv.write('config', { max_versions: 4 });
    await kv.write('data/many', { data: { v: 13 } });
    metadata = (await kv.read('metadata/many')).data!;
    expect(Object.keys(metadata.versions as object)).toEqual(['10', '11', '12', '13']);
    expect(metadata.oldest_version).toBe(10);

    // The key's own setting wins and applies at once.
    await kv.write('metadata/many', { max_versions: 2 });
    metadata = (await kv.read('metadata/many')).data!;
    expect(Object.keys(metadata.versions as object)).toEqual(['12', '13']);
    expect((await kv.read('data/many', { version: 11 })).status).toBe(404);
    expect((await kv.read('data/many')).data?.data).toEqual({ v: 13 });
  });

  it('makes versions read as deleted after delete_version_after', async () => {
    await kv.write('config', { delete_version_after: '1h' });
    await kv.write('data/short', { data: { v: 1 } });
    expect((await kv.read('data/short')).data?.metadata).toMatchObject({ deletion_time: '2030-01-01T01:00:00.000Z' });

    kv.clock.advance(3599);
    expect((await kv.read('data/short')).status).toBe(200);
    kv.clock.advance(1);
    const expired = await kv.read('data/short');
    expect(expired.status).toBe(404);
    expect(expired.data).toMatchObject({ data: null, metadata: { version: 1 } });

    // The key's shorter setting wins over the mount's.
    await kv.write('metadata/shorter', { delete_version_after: '10m' });
    await kv.write('data/shorter', { data: { v: 1 } });
    kv.clock.advance(600);
    expect((await kv.read('data/shorter')).status).toBe(404);
  });

  it('reads and writes the mount config', async () => {
    expect(await kv.read('config')).toEqual({ status: 200, data: { max_versions: 0, cas_required: false, delete_version_after: '0s' } });
    expect(await kv.write('config', { max_versions: 5, delete_version_after: '3h25m19s' })).toEqual({ status: 204 });
    await kv.write('config', { cas_required: true });
    expect((await kv.read('config')).data).toEqual({ max_versions: 5, cas_required: true, delete_version_after: '3h25m19s' });
  });

  it('returns subkeys with values replaced by null, limited by depth', async () => {
    const data = { user: 'u', db: { host: 'h', opts: { tls: true }, empty: {} }, list: [1, 2] };
    await kv.write('data/tree', { data });
    await kv.write('data/tree', { data: { only: 'v2' } });

    expect(await kv.read('subkeys/tree', { version: 1 })).toEqual({
      status: 200,
      data: {
        subkeys: { user: null, db: { host: null, opts: { tls: null }, empty: null }, list: null },
        metadata: { created_time: T0, custom_metadata: null, deletion_time: '', destroyed: false, version: 1 },
      },
    });
    expect((await kv.read('subkeys/tree', { version: 1, depth: 1 })).data?.subkeys).toEqual({ user: null, db: null, list: null });
    expect((await kv.read('subkeys/tree', { version: 1, depth: 2 })).data?.subkeys).toEqual({
      user: null,
      db: { host: null, opts: null, empty: null },
      list: null,
    });
    expect((await kv.read('subkeys/tree')).data?.subkeys).toEqual({ only: null });

    await kv.remove('data/tree');
    expect(await kv.read('subkeys/tree')).toMatchObject({ status: 404, data: { subkeys: null, metadata: { version: 2 } } });
    expect((await kv.read('subkeys/tree', { depth: -1 })).errors).toEqual(['field "depth" must be a non-negative integer']);
  });

  it('tells create from update on data/ writes', async () => {
    expect((await kv.write('data/caps', { data: { v: 1 } }, { capabilities: ['update'] })).status).toBe(403);
    expect((await kv.write('data/caps', { data: { v: 1 } }, { capabilities: ['create'] })).status).toBe(200);
    expect((await kv.write('data/caps', { data: { v: 2 } }, { capabilities: ['create'] })).status).toBe(403);
    expect((await kv.write('data/caps', { data: { v: 2 } }, { capabilities: ['update'] })).status).toBe(200);
    expect((await kv.read('data/caps')).data?.metadata).toMatchObject({ version: 2 });
  });

  it('warns about unknown fields on data writes', async () => {
    const outcome = await kv.write('data/w', { data: { a: 1 }, extra: true });
    expect(outcome.status).toBe(200);
    expect(outcome.warnings).toEqual(['Endpoint ignored these unrecognized parameters: [extra]']);
  });
});
