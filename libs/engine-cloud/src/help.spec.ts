import { buildOpenApi } from '@svc/framework';
import { engineContext, mountStorage, testMount, validateOpenApi } from '@svc/testing';
import { CloudBackend } from './cloud-backend';

describe('cloud help and OpenAPI', () => {
  it('documents every path, and the document validates', async () => {
    const mount = testMount('cloud');
    const backend = new CloudBackend(mount, engineContext({ storage: mountStorage(mount) }));
    expect(backend.help('').help).toMatch(/cloud-credential engine issues provider credentials/);
    const document = buildOpenApi([{ prefix: '/cloud/', backend }], { title: 'cloud', version: '1' });
    expect(await validateOpenApi(document)).toEqual({ valid: true });
    expect(Object.keys(document.paths).sort()).toEqual([
      '/cloud/config/lease',
      '/cloud/config/root',
      '/cloud/config/rotate-root',
      '/cloud/creds/{name}',
      '/cloud/roles/',
      '/cloud/roles/{name}',
      '/cloud/static-creds/{name}',
      '/cloud/static-roles/',
      '/cloud/static-roles/{name}',
      '/cloud/sts/{name}',
    ]);
    await backend.cleanup();
  });
});
