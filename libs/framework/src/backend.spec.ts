import { ServiceError } from '@svc/api-contract';
import { createView, InmemPhysical, type StorageView } from '@svc/storage';
import {
  Backend,
  listResponse,
  type BackendDeclaration,
  type Capability,
  type FieldData,
  type Request,
  type Response,
} from './index';

/** Storage for handlers in these tests: a view of an in-memory store (storage itself is tested elsewhere). */
function mapStorage(): StorageView {
  return createView(new InmemPhysical(), '');
}

/** A transit-like backend: keys are created on first write and updated afterwards. */
function keysBackend(storage: StorageView = mapStorage()): { backend: Backend; revoked: Record<string, unknown>[] } {
  const revoked: Record<string, unknown>[] = [];
  const keyPath = (fields: FieldData) => `keys/${fields.get<string>('name')}`;
  const declaration: BackendDeclaration = {
    type: 'keys',
    help: 'The keys engine stores named keys.',
    paths: [
      {
        pattern: 'keys/',
        synopsis: 'List keys.',
        operations: { list: async () => listResponse(await storage.list('keys/')) },
      },
      {
        pattern: 'keys/:name',
        synopsis: 'Manage a named key.',
        description: 'Keys are created on first write.',
        fields: {
          name: { type: 'name', description: 'Name of the key', required: true },
          exportable: { type: 'bool', description: 'Whether the key may be exported', default: false },
          ttl: { type: 'duration', description: 'Rotation period', default: '24h' },
          plaintext: { type: 'string', description: 'Sample secret', sensitive: true },
        },
        existenceCheck: async (_req, fields) => (await storage.get(keyPath(fields))) !== null,
        operations: {
          create: {
            summary: 'Create a key.',
            handler: async (req, fields) => {
              await storage.putJSON(keyPath(fields), { exportable: fields.get('exportable'), ttl: fields.get('ttl') });
              return { data: { operation: req.operation } };
            },
          },
          update: {
            summary: 'Update a key.',
            handler: async (req, fields) => {
              await storage.putJSON(keyPath(fields), { exportable: fields.get('exportable'), ttl: fields.get('ttl') });
              return { data: { operation: req.operation }, warnings: ['handler warning'] };
            },
          },
          read: {
            summary: 'Read a key.',
            handler: async (_req, fields) => ({ data: (await storage.getJSON(keyPath(fields))) ?? {} }),
          },
          delete: {
            summary: 'Delete a key.',
            sudo: true,
            handler: async (_req, fields) => {
              await storage.delete(keyPath(fields));
              return undefined;
            },
          },
        },
      },
      {
        pattern: 'encrypt/:name',
        synopsis: 'Encrypt with a named key.',
        fields: {
          name: { type: 'name', description: 'Name of the key' },
          plaintext: { type: 'string', description: 'Base64 plaintext', required: true, sensitive: true },
        },
        operations: {
          update: async (_req, fields) => ({ data: { ciphertext: `svc:v1:${fields.get<string>('plaintext').length}` } }),
          read: async (_req, fields) => ({ data: { name: fields.get('name') } }),
        },
      },
      {
        pattern: 'config',
        synopsis: 'Engine configuration.',
        acceptsAnyFields: true,
        operations: { update: async () => undefined },
      },
      {
        pattern: 'import/:name',
        synopsis: 'Import a key (create only).',
        fields: { name: { type: 'name', description: 'Name of the key' } },
        operations: {
          create: { summary: 'Import a key.', rootNamespace: true, handler: async (req) => ({ data: { op: req.operation } }) },
        },
      },
    ],
    secrets: {
      lease: {
        description: 'A leased credential.',
        renew: async (_req, internal) => ({ data: { renewed: internal.id } }),
        revoke: async (_req, internal) => {
          revoked.push(internal);
        },
      },
      permanent: { description: 'Not renewable.', revoke: async () => undefined },
    },
  };
  return { backend: new Backend(declaration), revoked };
}

function request(overrides: Partial<Request> & { caps?: Capability[] }): Request {
  const { caps = ['root'], ...rest } = overrides;
  return {
    requestId: 'req-1',
    operation: 'read',
    path: '',
    data: {},
    mount: {
      path: 'keys/',
      type: 'keys',
      uuid: 'mount-uuid',
      accessor: 'keys_1',
      namespace: '',
      description: '',
      config: { default_lease_ttl: 0, max_lease_ttl: 0 },
      options: {},
      local: false,
      seal_wrap: false,
    },
    capabilities: new Set(caps),
    ...rest,
  };
}

async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  return err as ServiceError;
}

describe('Backend.handle routing', () => {
  const { backend } = keysBackend();

  it('answers 404 "unsupported path" when no pattern matches', async () => {
    const err = await failure(backend.handle(request({ path: 'nothing/here' })));
    expect([err.kind, err.errors]).toEqual(['unsupported-path', ['unsupported path']]);
  });

  it('answers 404 for a path parameter ending in a period', async () => {
    const err = await failure(backend.handle(request({ path: 'keys/foo.' })));
    expect(err.kind).toBe('unsupported-path');
  });

  it('answers 405 for an operation the path does not declare, before validating fields', async () => {
    const err = await failure(backend.handle(request({ operation: 'delete', path: 'keys/' })));
    expect([err.kind, err.errors]).toEqual(['method-not-allowed', ['unsupported operation']]);
    const patch = await failure(backend.handle(request({ operation: 'patch', path: 'keys/k', data: { ttl: 'bad' } })));
    expect(patch.kind).toBe('method-not-allowed');
  });

  it('dispatches reads and lists to their handlers', async () => {
    const storage = mapStorage();
    const { backend } = keysBackend(storage);
    await backend.handle(request({ operation: 'update', path: 'keys/a', data: { ttl: '1h' } }));
    await backend.handle(request({ operation: 'update', path: 'keys/b' }));
    expect(await backend.handle(request({ operation: 'list', path: 'keys/' }))).toEqual({
      data: { keys: ['a', 'b'] },
    });
    expect(await backend.handle(request({ operation: 'read', path: 'keys/a' }))).toEqual({
      data: { exportable: false, ttl: 3600 },
    });
  });
});

describe('Backend.handle writes: existence check and capabilities', () => {
  const { backend } = keysBackend();

  async function withExistingKey(): Promise<StorageView> {
    const storage = mapStorage();
    const { backend } = keysBackend(storage);
    await backend.handle(request({ operation: 'update', path: 'keys/k' }));
    return storage;
  }

  it('a write to a missing key is a create', async () => {
    const response = await backend.handle(request({ operation: 'update', path: 'keys/k', caps: ['create'] }));
    expect(response?.data).toEqual({ operation: 'create' });
  });

  it('a write to an existing key is an update', async () => {
    const storage = await withExistingKey();
    const { backend } = keysBackend(storage);
    const response = await backend.handle(request({ operation: 'update', path: 'keys/k', caps: ['update'] }));
    expect(response?.data).toEqual({ operation: 'update' });
  });

  it('refuses a token with only update on a missing key', async () => {
    const storage = mapStorage();
    const { backend } = keysBackend(storage);
    const err = await failure(backend.handle(request({ operation: 'update', path: 'keys/k', caps: ['update'] })));
    expect([err.kind, err.errors]).toEqual(['permission-denied', ['permission denied']]);
    expect(await storage.get('keys/k')).toBeNull();
  });

  it('refuses a token with only create on an existing key', async () => {
    const storage = await withExistingKey();
    const { backend } = keysBackend(storage);
    const err = await failure(backend.handle(request({ operation: 'update', path: 'keys/k', caps: ['create'] })));
    expect(err.kind).toBe('permission-denied');
  });

  it('refuses a token with neither capability before looking at the data', async () => {
    const err = await failure(
      backend.handle(request({ operation: 'update', path: 'keys/k', data: { ttl: 'bad' }, caps: ['read'] })),
    );
    expect(err.kind).toBe('permission-denied');
  });

  it('lets deny override everything, and root allow everything', async () => {
    const { backend } = keysBackend();
    const denied = await failure(backend.handle(request({ operation: 'update', path: 'keys/k', caps: ['root', 'deny'] })));
    expect(denied.kind).toBe('permission-denied');
    const response = await backend.handle(request({ operation: 'update', path: 'keys/k', caps: ['root'] }));
    expect(response?.data).toEqual({ operation: 'create' });
  });

  it('skips the existence check of a path serving create and update alike for a caller that may do both', async () => {
    let checks = 0;
    const alike = new Backend({
      type: 'alike',
      help: 'Items.',
      paths: [
        {
          pattern: 'items/:name',
          synopsis: 'An item.',
          fields: { name: { type: 'name', description: 'Name of the item', required: true } },
          existenceCheck: () => (checks++, false),
          createAndUpdateAlike: true,
          operations: { create: async (req) => ({ data: { operation: req.operation } }) },
        },
      ],
    });
    expect((await alike.handle(request({ operation: 'update', path: 'items/a', caps: ['create', 'update'] })))?.data).toEqual({ operation: 'update' });
    expect(checks).toBe(0);
    expect((await alike.handle(request({ operation: 'update', path: 'items/a', caps: ['create'] })))?.data).toEqual({ operation: 'create' });
    expect(checks).toBe(1);
    expect((await failure(alike.handle(request({ operation: 'update', path: 'items/a', caps: ['update'] })))).kind).toBe('permission-denied');
  });

  it('without an existence check, a write is an update when update is declared', async () => {
    expect(await backend.handle(request({ operation: 'update', path: 'config', caps: ['update'] }))).toBeUndefined();
    const err = await failure(backend.handle(request({ operation: 'update', path: 'config', caps: ['create'] })));
    expect(err.kind).toBe('permission-denied');
  });

  it('without an existence check, a write is a create when only create is declared', async () => {
    const response = await backend.handle(request({ operation: 'update', path: 'import/k', caps: ['create'] }));
    expect(response?.data).toEqual({ op: 'create' });
    const err = await failure(backend.handle(request({ operation: 'update', path: 'import/k', caps: ['update'] })));
    expect(err.kind).toBe('permission-denied');
  });
});

describe('Backend.handle fields and warnings', () => {
  const { backend } = keysBackend();

  it('answers 400 naming the field, without echoing sensitive values', async () => {
    const err = await failure(
      backend.handle(request({ operation: 'update', path: 'keys/k', data: { ttl: 'abc', plaintext: { s: 'p4ss' } } })),
    );
    expect(err.kind).toBe('bad-request');
    expect(err.errors).toEqual([
      'field "ttl": "abc" is not a valid duration',
      'field "plaintext": value is not a valid string',
    ]);
  });

  it('requires required fields on writes only', async () => {
    const err = await failure(backend.handle(request({ operation: 'update', path: 'encrypt/k' })));
    expect([err.kind, err.errors]).toEqual(['bad-request', ['missing required field "plaintext"']]);
    expect(await backend.handle(request({ operation: 'read', path: 'encrypt/k' }))).toEqual({ data: { name: 'k' } });
  });

  it('warns about unknown fields, keeping the handler warnings', async () => {
    const storage = mapStorage();
    const { backend } = keysBackend(storage);
    await backend.handle(request({ operation: 'update', path: 'keys/k' }));
    const response = await backend.handle(
      request({ operation: 'update', path: 'keys/k', data: { zeta: 1, alpha: 2, ttl: 5 } }),
    );
    expect(response?.warnings).toEqual(['handler warning', 'Endpoint ignored these unrecognized parameters: [alpha zeta]']);
  });

  it('creates a warnings-only response when the handler returns nothing', async () => {
    const storage = mapStorage();
    const { backend } = keysBackend(storage);
    await backend.handle(request({ operation: 'update', path: 'keys/k' }));
    const response = await backend.handle(request({ operation: 'delete', path: 'keys/k', data: { extra: 1 } }));
    expect(response).toEqual({ warnings: ['Endpoint ignored these unrecognized parameters: [extra]'] });
  });

  it('accepts any fields silently when the path says so', async () => {
    expect(await backend.handle(request({ operation: 'update', path: 'config', data: { anything: 1 } }))).toBeUndefined();
  });
});

describe('Backend.operationInfo', () => {
  const { backend } = keysBackend();

  it('returns the serving operation with its flags spelled out', () => {
    expect(backend.operationInfo('keys/k', 'delete')).toEqual(
      expect.objectContaining({ operation: 'delete', summary: 'Delete a key.', sudo: true, rootNamespace: false, unauthenticated: false }),
    );
    expect(backend.operationInfo('import/k', 'update')).toEqual(
      expect.objectContaining({ operation: 'create', rootNamespace: true, sudo: false }),
    );
  });

  it('uses the path synopsis as summary for bare handlers', () => {
    expect(backend.operationInfo('keys/', 'list')?.summary).toBe('List keys.');
  });

  it('returns null for an unmatched path or an undeclared operation', () => {
    expect(backend.operationInfo('nothing', 'read')).toBeNull();
    expect(backend.operationInfo('keys/', 'delete')).toBeNull();
  });
});

describe('Backend secrets', () => {
  it('dispatches renew and revoke to the secret type', async () => {
    const { backend, revoked } = keysBackend();
    expect(await backend.renewSecret(request({}), 'lease', { id: 'cred-1' })).toEqual({ data: { renewed: 'cred-1' } });
    await backend.revokeSecret(request({}), 'lease', { id: 'cred-2' });
    expect(revoked).toEqual([{ id: 'cred-2' }]);
  });

  it('answers 400 for an unknown secret type or one without renewal', async () => {
    const { backend } = keysBackend();
    const unknown = await failure(backend.revokeSecret(request({}), 'toString', {}));
    expect([unknown.kind, unknown.errors]).toEqual(['bad-request', ['unknown secret type "toString"']]);
    const permanent = await failure(backend.renewSecret(request({}), 'permanent', {}));
    expect([permanent.kind, permanent.errors]).toEqual(['bad-request', ['secret type "permanent" is not renewable']]);
  });
});

describe('Backend.help', () => {
  const { backend } = keysBackend();

  it('gives the mount help and a path index at the root', () => {
    const { help } = backend.help('');
    expect(help).toContain('The keys engine stores named keys.');
    expect(help).toContain('| `keys/:name` | Manage a named key. |');
    expect(help).toContain('| `config` | Engine configuration. |');
  });

  it('describes a matching path with its operations and fields', () => {
    const { help } = backend.help('keys/my-key');
    expect(help).toContain('## `keys/:name`');
    expect(help).toContain('Keys are created on first write.');
    expect(help).toContain('| delete (sudo) | Delete a key. |');
    expect(help).toContain('| `ttl` | duration | no | `"24h"` | Rotation period |');
    expect(help).toContain('| `name` | name | yes |  | Name of the key |');
  });

  it('indexes the paths below a prefix that no declaration matches', () => {
    const { help } = backend.help('import/');
    expect(help).toContain('Paths under `import/`');
    expect(help).toContain('| `import/:name` | Import a key (create only). |');
  });

  it('answers 404 for a path with nothing at or below it', () => {
    expect(() => backend.help('nothing')).toThrow(expect.objectContaining({ kind: 'unsupported-path' }));
  });

  it('is served by handle() for the help operation as a bare body', async () => {
    const response = (await backend.handle(request({ operation: 'help', path: 'keys/' }))) as Response;
    expect(response.raw).toEqual(backend.help('keys/'));
    expect(Object.keys((response.raw as { openapi: { paths: object } }).openapi.paths)).toEqual(['/', '/{name}']);
  });
});

describe('aliases and data at the top level', () => {
  const backend = new Backend({
    type: 'leases',
    help: 'Leases.',
    paths: [
      {
        pattern: 'leases/revoke/*id?',
        aliases: ['revoke/*id?'],
        synopsis: 'Revoke a lease.',
        dataAtTopLevel: true,
        operations: { update: async (_req, fields) => ({ data: { id: fields.params.id ?? '' } }) },
      },
    ],
  });

  it('serves every alias with the one declaration, its answer marked for the top level', async () => {
    for (const path of ['leases/revoke/a/b', 'revoke/a/b']) {
      expect(await backend.handle(request({ operation: 'update', path }))).toEqual({ data: { id: 'a/b' }, dataAtTopLevel: true });
    }
    expect(await backend.handle(request({ operation: 'update', path: 'revoke' }))).toEqual({ data: { id: '' }, dataAtTopLevel: true });
    expect((await failure(backend.handle(request({ operation: 'update', path: 'revoke-not' })))).kind).toBe('unsupported-path');
  });

  it('documents each alias in OpenAPI, and the help names them', () => {
    expect(Object.keys(backend.help('').openapi.paths).sort()).toEqual(['/leases/revoke', '/leases/revoke/{id}', '/revoke', '/revoke/{id}']);
    expect(backend.help('leases/revoke').help).toContain('Also served at `revoke/*id?`.');
  });
});
