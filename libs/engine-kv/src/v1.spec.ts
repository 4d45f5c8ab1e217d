import { KvHarness } from './testing/harness';

describe('kv version 1', () => {
  let kv: KvHarness;

  beforeEach(() => {
    kv = KvHarness.inmem('1');
  });

  it('stores the whole body as the secret and reads it back', async () => {
    expect(await kv.write('app/db', { user: 'admin', password: 's3cr3t', port: 5432 })).toEqual({ status: 204 });
    expect(await kv.read('app/db')).toEqual({ status: 200, data: { user: 'admin', password: 's3cr3t', port: 5432 } });

    // A write replaces the secret; it does not merge.
    await kv.write('app/db', { user: 'other' });
    expect((await kv.read('app/db')).data).toEqual({ user: 'other' });
  });

  it('answers a missing secret with 404 and deletes secrets', async () => {
    expect(await kv.read('nothing/here')).toEqual({ status: 404, errors: [] });
    await kv.write('gone', { a: 1 });
    expect(await kv.remove('gone')).toEqual({ status: 204 });
    expect((await kv.read('gone')).status).toBe(404);
  });

  it('lists directories: keys and sub-directories ending in "/"', async () => {
    await kv.write('team/alpha', { a: 1 });
    await kv.write('team/beta/one', { b: 1 });
    await kv.write('team/beta/two', { b: 2 });
    await kv.write('top', { t: 1 });

    expect((await kv.list('')).data).toEqual({ keys: ['team/', 'top'] });
    expect((await kv.list('team/')).data).toEqual({ keys: ['alpha', 'beta/'] });
    // Without the trailing '/' a LIST still means the directory.
    expect((await kv.list('team/beta')).data).toEqual({ keys: ['one', 'two'] });
    expect((await kv.list('empty/')).data).toEqual({ keys: [] });
  });

  it('accepts any field names without warnings', async () => {
    const outcome = await kv.write('free', { anything: 'goes', nested: { deep: [1, 2] } });
    expect(outcome).toEqual({ status: 204 });
    expect((await kv.read('free')).data).toEqual({ anything: 'goes', nested: { deep: [1, 2] } });
  });

  it('refuses an empty body and writes nothing', async () => {
    const outcome = await kv.write('empty', {});
    expect(outcome.status).toBe(400);
    expect(outcome.errors?.[0]).toMatch(/missing data fields/);
    expect((await kv.read('empty')).status).toBe(404);
  });

  it('tells create from update: create only on a missing key, update only on an existing one', async () => {
    expect((await kv.write('caps', { v: 1 }, { capabilities: ['update'] })).status).toBe(403);
    expect(await kv.write('caps', { v: 1 }, { capabilities: ['create'] })).toEqual({ status: 204 });
    expect((await kv.write('caps', { v: 2 }, { capabilities: ['create'] })).status).toBe(403);
    expect(await kv.write('caps', { v: 2 }, { capabilities: ['update'] })).toEqual({ status: 204 });
    expect((await kv.read('caps')).data).toEqual({ v: 2 });
  });

  it('answers an unsupported version option with 400', async () => {
    kv.tune('3');
    const outcome = await kv.read('x');
    expect(outcome.status).toBe(400);
    expect(outcome.errors?.[0]).toMatch(/unsupported kv version "3"/);
  });
});
