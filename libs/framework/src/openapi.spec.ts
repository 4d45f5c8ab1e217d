import { validateOpenApi } from '@svc/testing';
import {
  Backend,
  buildOpenApi,
  mergeOpenApi,
  openApiDocument,
  type BackendDeclaration,
  type OpenApiDocument,
  type OperationHandler,
} from './index';

/** Checks the validator cannot: unique operation ids and every templated parameter declared. */
function expectConsistent(document: OpenApiDocument): void {
  const ids = Object.values(document.paths).flatMap((item) =>
    (['get', 'post', 'patch', 'delete'] as const).flatMap((method) => (item[method] ? [item[method].operationId] : [])),
  );
  expect(new Set(ids).size).toBe(ids.length);
  for (const [path, item] of Object.entries(document.paths)) {
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]).sort();
    expect([path, (item.parameters ?? []).map((param) => param.name).sort()]).toEqual([path, templated]);
  }
}

const noop: OperationHandler = async () => undefined;

const transit: BackendDeclaration = {
  type: 'transit',
  help: 'Encryption as a service.',
  paths: [
    {
      pattern: 'keys/',
      synopsis: 'List keys.',
      operations: { list: noop },
    },
    {
      pattern: 'keys/:name',
      synopsis: 'Manage a named key.',
      fields: {
        name: { type: 'name', description: 'Name of the key' },
        type: { type: 'string', description: 'Key type', default: 'aes256-gcm96', allowed: ['aes256-gcm96', 'rsa-2048'] },
        exportable: { type: 'bool', description: 'Exportable' },
        auto_rotate_period: { type: 'duration', description: 'Rotation period', default: 0 },
        old_name: { type: 'string', description: 'Deprecated alias', deprecated: true },
      },
      existenceCheck: async () => false,
      operations: {
        create: { summary: 'Create a key.', handler: noop },
        update: { summary: 'Update a key.', handler: noop },
        read: { summary: 'Read a key.', handler: noop },
        delete: { summary: 'Delete a key.', sudo: true, handler: noop },
      },
    },
    {
      pattern: 'encrypt/:name',
      synopsis: 'Encrypt.',
      fields: {
        plaintext: { type: 'string', description: 'Base64 plaintext', required: true, sensitive: true },
        context: { type: 'string', description: 'Context' },
        batch_input: { type: 'list', description: 'Batch' },
        headers: { type: 'header', description: 'Headers' },
        labels: { type: 'kv-pairs', description: 'Labels' },
        ids: { type: 'comma-int-list', description: 'Ids' },
        policies: { type: 'comma-string-list', description: 'Policies' },
        config: { type: 'map', description: 'Config' },
        not_before: { type: 'time', description: 'Start', default: new Date(0) },
        count: { type: 'int', description: 'Count' },
      },
      operations: { update: { summary: 'Encrypt plaintext.', handler: noop } },
    },
    {
      pattern: 'random/:bytes?',
      synopsis: 'Random bytes.',
      fields: {
        bytes: { type: 'int', description: 'Number of bytes', default: 32 },
        format: { type: 'string', description: 'Output format', allowed: ['hex', 'base64'] },
      },
      operations: { read: { summary: 'Generate random bytes.', forwardQuery: true, handler: noop }, update: noop },
    },
    {
      pattern: 'data/*path',
      synopsis: 'Secrets.',
      acceptsAnyFields: true,
      operations: {
        read: noop,
        list: noop,
        update: noop,
        patch: { summary: 'Patch a secret.', handler: noop },
        delete: noop,
      },
    },
    {
      pattern: 'login',
      synopsis: 'Log in.',
      fields: { role: { type: 'string', description: 'Role' } },
      operations: { update: { summary: 'Log in.', unauthenticated: true, rootNamespace: true, handler: noop } },
    },
    { pattern: 'a-b', synopsis: 'Dash.', operations: { read: noop } },
    { pattern: 'a/b', synopsis: 'Slash.', operations: { read: noop } },
  ],
};

describe('buildOpenApi', () => {
  const document = buildOpenApi(
    [
      { prefix: '/transit/', backend: new Backend(transit) },
      { prefix: '/other/transit/', backend: new Backend(transit) },
    ],
    { title: 'Secrets Service', version: '1.0.0' },
  );

  it('produces a valid OpenAPI 3.0.3 document', async () => {
    expect(document.openapi).toBe('3.0.3');
    expect(await validateOpenApi(document)).toEqual({ valid: true });
    expectConsistent(document);
  });

  it('places each backend under its prefix', () => {
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/transit/keys/', '/transit/keys/{name}', '/other/transit/keys/{name}', '/transit/data/{path}']),
    );
  });

  it('maps operations to methods', () => {
    const key = document.paths['/transit/keys/{name}'];
    expect(Object.keys(key).filter((k) => ['get', 'post', 'patch', 'delete'].includes(k)).sort()).toEqual([
      'delete',
      'get',
      'post',
    ]);
    expect(key.post?.summary).toBe('Update a key.');
    expect(key.delete?.['x-svc-sudo']).toBe(true);
    expect(document.paths['/transit/data/{path}'].patch?.requestBody?.content).toHaveProperty(['application/merge-patch+json']);
  });

  it('documents LIST as a required list=true query on list-only paths and a switch alongside reads', () => {
    expect(document.paths['/transit/keys/'].get?.parameters).toEqual([
      expect.objectContaining({ name: 'list', in: 'query', required: true, schema: { type: 'string', enum: ['true'] } }),
    ]);
    expect(document.paths['/transit/data/{path}'].get?.parameters).toEqual([
      expect.objectContaining({ name: 'list', in: 'query', required: false, schema: { type: 'boolean' } }),
    ]);
  });

  it('describes body fields with their types, leaving out path parameters and deprecated fields', () => {
    const body = document.paths['/transit/keys/{name}'].post?.requestBody?.content['application/json'].schema;
    expect(Object.keys(body?.properties as object).sort()).toEqual(['auto_rotate_period', 'exportable', 'type']);
    const properties = body?.properties as Record<string, Record<string, unknown>>;
    expect(properties.type).toEqual(
      expect.objectContaining({ type: 'string', enum: ['aes256-gcm96', 'rsa-2048'], default: 'aes256-gcm96' }),
    );
    expect(properties.auto_rotate_period.oneOf).toEqual([expect.objectContaining({ type: 'integer' }), expect.objectContaining({ type: 'string' })]);

    const encrypt = document.paths['/transit/encrypt/{name}'].post?.requestBody;
    expect(encrypt?.required).toBe(true);
    expect(encrypt?.content['application/json'].schema.required).toEqual(['plaintext']);
  });

  it('documents path parameters and query fields of forwarded reads', () => {
    expect(document.paths['/transit/random'].parameters).toBeUndefined();
    expect(document.paths['/transit/random/{bytes}'].parameters).toEqual([
      expect.objectContaining({ name: 'bytes', in: 'path', required: true, schema: expect.objectContaining({ type: 'integer' }) }),
    ]);
    expect(document.paths['/transit/random'].get?.parameters).toEqual([expect.objectContaining({ name: 'format', in: 'query' })]);
  });

  it('marks flags with vendor extensions', () => {
    const login = document.paths['/transit/login'].post;
    expect(login?.['x-svc-unauthenticated']).toBe(true);
    expect(login?.['x-svc-root-namespace']).toBe(true);
    expect(login?.['x-svc-sudo']).toBeUndefined();
  });

  it('keeps operation ids unique when paths slug alike', () => {
    expect(document.paths['/transit/a-b'].get?.operationId).toBe('read-transit-a-b');
    expect(document.paths['/transit/a/b'].get?.operationId).toBe('read-transit-a-b-2');
  });
});

describe('Backend.help openapi', () => {
  const backend = new Backend(transit);

  it('is relative to the queried path and valid', async () => {
    const { openapi } = backend.help('keys/');
    expect(Object.keys(openapi.paths)).toEqual(['/', '/{name}']);
    expect(openapi.paths['/{name}'].parameters).toEqual([expect.objectContaining({ name: 'name', in: 'path' })]);
    expect(await validateOpenApi(openapi)).toEqual({ valid: true });
    expectConsistent(openapi);
  });

  it('fixes parameters given in a concrete path', async () => {
    const { openapi } = backend.help('keys/my-key');
    expect(Object.keys(openapi.paths)).toEqual(['/']);
    expect(openapi.paths['/'].parameters).toBeUndefined();
    expect(openapi.paths['/'].post).toBeDefined();
    expect(await validateOpenApi(openapi)).toEqual({ valid: true });
  });

  it('covers the whole backend at the root', async () => {
    const { openapi } = backend.help('');
    expect(Object.keys(openapi.paths)).toContain('/keys/{name}');
    expect(await validateOpenApi(openapi)).toEqual({ valid: true });
    expectConsistent(openapi);
  });
});

describe('mergeOpenApi', () => {
  it('places help documents under mount prefixes with unique operation ids', async () => {
    const backend = new Backend(transit);
    const document = openApiDocument({ title: 'Secrets Service', version: '1.0.0' });
    const operationIds = new Set<string>();
    mergeOpenApi(document, backend.help('').openapi, '/transit/', operationIds);
    mergeOpenApi(document, backend.help('').openapi, '/ns1/transit/', operationIds);
    expect(document.paths['/transit/keys/{name}'].get?.operationId).toBe('read-keys-name');
    expect(document.paths['/ns1/transit/keys/{name}'].get?.operationId).toBe('read-keys-name-ns1-transit');
    expect(await validateOpenApi(document)).toEqual({ valid: true });
    expectConsistent(document);
  });
});
