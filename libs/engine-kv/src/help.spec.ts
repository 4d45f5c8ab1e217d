import { buildOpenApi } from '@svc/framework';
import { validateOpenApi } from '@svc/testing';
import { KvHarness } from './testing/harness';

describe('kv help and OpenAPI', () => {
  it('describes the version 1 paths of a version 1 mount', async () => {
    const kv = KvHarness.inmem('1');
    const help = (await kv.backend()).help('');
    expect(help.help).toMatch(/key\/value secrets engine/);
    expect(Object.keys(help.openapi.paths)).toEqual(['/', '/{path}']);
    expect((await kv.backend()).help('app/db').help).toMatch(/Reads, writes, deletes and lists secrets/);
  });

  it('describes the version 2 paths once the mount is tuned to version 2', async () => {
    const kv = KvHarness.inmem('1');
    kv.tune('2');
    await kv.read('config');
    const document = buildOpenApi([{ prefix: '/secret/', backend: await kv.backend() }], { title: 'kv', version: '1' });
    expect(await validateOpenApi(document)).toEqual({ valid: true });
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/secret/config', '/secret/data/{path}', '/secret/metadata/', '/secret/metadata/{path}', '/secret/subkeys/{path}', '/secret/destroy/{path}']),
    );
    expect(document.paths['/secret/data/{path}'].patch).toBeDefined();
    expect((await kv.backend()).help('data/app').help).toMatch(/Reads and writes the versions of a secret/);
  });
});
