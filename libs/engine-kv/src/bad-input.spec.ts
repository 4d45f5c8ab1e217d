import { KvHarness } from './testing/harness';

/** Every key the mount's storage holds, so a test can show a refused request wrote nothing. */
async function storedKeys(kv: KvHarness, directory = ''): Promise<string[]> {
  const keys: string[] = [];
  for (const name of await kv.storage.list(directory)) {
    if (name.endsWith('/')) keys.push(...(await storedKeys(kv, directory + name)));
    else keys.push(directory + name);
  }
  return keys;
}

describe('kv bad input', () => {
  describe('version 2', () => {
    let kv: KvHarness;
    let before: string[];

    beforeEach(async () => {
      kv = KvHarness.inmem('2');
      await kv.write('data/existing', { data: { a: 1 } });
      before = await storedKeys(kv);
    });

    afterEach(async () => {
      expect(await storedKeys(kv)).toEqual(before);
      expect((await kv.read('metadata/existing')).data?.current_version).toBe(1);
    });

    it.each([
      ['a string', 'not a map'],
      ['a list', [1, 2]],
      ['a number', 7],
    ])('refuses data that is %s', async (_kind, data) => {
      const outcome = await kv.write('data/existing', { data });
      expect(outcome.status).toBe(400);
      expect(outcome.errors).toEqual(['field "data": value is not a map']);
    });

    it('refuses a write without data', async () => {
      expect(await kv.write('data/new', { options: { cas: 0 } })).toEqual({ status: 400, errors: ['missing required field "data"'] });
      expect((await kv.patch('data/existing', {})).errors).toEqual(['missing required field "data"']);
    });

    it.each([['one'], [-1], [1.5], [true], [{ n: 1 }]])('refuses cas %j', async (cas) => {
      const outcome = await kv.write('data/existing', { data: { a: 2 }, options: { cas } });
      expect(outcome).toEqual({ status: 400, errors: ['field "options.cas" must be a non-negative integer'] });
    });

    it('refuses options that are not a map', async () => {
      expect((await kv.write('data/existing', { data: { a: 2 }, options: 'cas=1' })).errors).toEqual([
        'field "options": "cas=1" is not a map',
      ]);
    });

    it.each([['abc'], ['1.5'], [-1], ['-2']])('refuses version %j', async (version) => {
      const outcome = await kv.read('data/existing', { version });
      expect(outcome.status).toBe(400);
      expect(outcome.errors?.[0]).toMatch(/field "version"/);
    });

    it.each([
      ['data/a/../existing', "'.' and '..' segments are not allowed"],
      ['data/../existing', "'.' and '..' segments are not allowed"],
      ['data/a/./b', "'.' and '..' segments are not allowed"],
      ['data/a//b', 'empty segments are not allowed'],
      ['data//a', 'empty segments are not allowed'],
      ['data/dir/', "it names a directory (ends in '/'), not a secret"],
    ])('refuses the path %s', async (path, problem) => {
      const secretPath = path.slice('data/'.length);
      for (const outcome of [
        await kv.write(path, { data: { a: 1 } }),
        await kv.read(path),
        await kv.remove(path),
        await kv.write(path.replace(/^data/, 'metadata'), { max_versions: 1 }),
        await kv.write(path.replace(/^data/, 'destroy'), { versions: [1] }),
      ]) {
        expect(outcome).toEqual({ status: 400, errors: [`invalid secret path ${JSON.stringify(secretPath)}: ${problem}`] });
      }
    });

    it('refuses a missing path', async () => {
      expect(await kv.write('data', { data: { a: 1 } })).toEqual({ status: 400, errors: ['a secret path is required'] });
      expect((await kv.read('metadata')).errors).toEqual(['a secret path is required']);
      expect((await kv.write('data/', { data: { a: 1 } })).status).toBe(404);
    });

    it('answers 404 for a path ending in a period', async () => {
      expect((await kv.write('data/name.', { data: { a: 1 } })).status).toBe(404);
      expect((await kv.read('data/dir/name.')).status).toBe(404);
    });

    it('refuses bad config values', async () => {
      expect((await kv.write('config', { max_versions: -3 })).errors).toEqual(['field "max_versions" must be a non-negative integer']);
      expect((await kv.write('config', { max_versions: 'many' })).status).toBe(400);
      expect((await kv.write('config', { delete_version_after: 'soon' })).status).toBe(400);
      expect((await kv.write('config', { cas_required: 'maybe' })).status).toBe(400);
    });
  });

  describe('version 1', () => {
    it('refuses bad paths and writes nothing', async () => {
      const kv = KvHarness.inmem('1');
      for (const [path, problem] of [
        ['a/../b', "'.' and '..' segments are not allowed"],
        ['a//b', 'empty segments are not allowed'],
        ['dir/', "it names a directory (ends in '/'), not a secret"],
      ]) {
        expect(await kv.write(path, { a: 1 })).toEqual({ status: 400, errors: [`invalid secret path ${JSON.stringify(path)}: ${problem}`] });
      }
      expect(await kv.write('', { a: 1 })).toEqual({ status: 400, errors: ['a secret path is required'] });
      expect((await kv.write('name.', { a: 1 })).status).toBe(404);
      expect((await kv.list('a//')).status).toBe(400);
      expect(await storedKeys(kv)).toEqual([]);
    });
  });
});
