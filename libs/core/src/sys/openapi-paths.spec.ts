import { EngineRegistry, GATEWAY, type EngineReply, type EngineRequest, type EngineType } from '@svc/engine-host';
import { Backend, type OpenApiDocument, type Request } from '@svc/framework';
import { VERSION } from '@svc/api-contract';
import { MountedBackend, mountStorage, testMount, unsealedBarrier } from '@svc/testing';
import { Namespace, ROOT_NAMESPACE } from '../namespaces/namespace';
import { openApiPaths } from './openapi-paths';

const NO_TTLS = { default_lease_ttl: 0, max_lease_ttl: 0 };

/** The backend of an engine of `type`, with one path: what its mounts document. */
function engineBackend(type: string, pattern: string): Backend {
  return new Backend({
    type,
    help: type,
    paths: [{ pattern, synopsis: `${type} ${pattern}`, operations: { read: { summary: `Read ${pattern}.`, handler: async () => undefined } } }],
  });
}

const ENGINES: Record<string, Backend> = { kv: engineBackend('kv', 'data/:name'), token: engineBackend('token', 'lookup') };

function engineType(type: string, table: 'secret' | 'auth', builtin = false): EngineType {
  return { type, table, runsIn: GATEWAY, builtin, factory: () => ENGINES[type] };
}

describe('sys/internal/specs/openapi', () => {
  let namespace: Namespace;
  /** The help requests sent to the mounts' engines. */
  let asked: EngineRequest[];
  let sys: MountedBackend;

  beforeEach(async () => {
    const barrier = unsealedBarrier();
    namespace = new Namespace(ROOT_NAMESPACE, barrier);
    await namespace.ensureBuiltins();
    asked = [];
    const engines = new EngineRegistry([
      engineType('system', 'secret', true),
      engineType('cubbyhole', 'secret', true),
      engineType('identity', 'secret', true),
      engineType('token', 'auth', true),
      engineType('kv', 'secret'),
    ]);
    const router = {
      namespaceOf: () => namespace,
      baseMessage: (req: Request) => ({ requestId: req.requestId, data: {}, caller: req.caller, capabilities: [...req.capabilities] }),
      // The engines of kv and token answer with their help; the others answer an error.
      dispatch: async (message: EngineRequest): Promise<EngineReply> => {
        asked.push(message);
        const backend = ENGINES[message.mount.type];
        return backend ? { ok: true, help: backend.help(message.path) } : { ok: false, kind: 'unavailable', errors: ['engine unavailable'] };
      },
    };
    const mount = testMount('system', { path: 'sys/' });
    const backend: Backend = new Backend({ type: 'system', help: 'sys/', paths: openApiPaths({ router, engines }, () => backend) });
    sys = new MountedBackend(backend, mount, mountStorage(mount));
  });

  const document = async (): Promise<OpenApiDocument> => (await sys.request('read', 'internal/specs/openapi'))?.raw as OpenApiDocument;

  it("documents sys/ and each mount whose engine answers, under the mount's path", async () => {
    await namespace.secretMounts.mount({ path: 'secret', type: 'kv' }, NO_TTLS);
    const openapi = await document();
    expect(openapi.openapi).toBe('3.0.3');
    expect(openapi.info).toEqual({ title: 'Secrets Service API', version: VERSION, description: 'HTTP API of Secrets Service' });
    expect(Object.keys(openapi.paths).sort()).toEqual(['/auth/token/lookup', '/secret/data/{name}', '/sys/internal/specs/openapi']);
    expect(openapi.paths['/secret/data/{name}']?.get?.summary).toBe('Read data/:name.');
  });

  it('asks the engine of every mount but sys/ for its help, as the caller', async () => {
    await namespace.secretMounts.mount({ path: 'secret', type: 'kv' }, NO_TTLS);
    await document();
    expect(asked.map(({ kind, mount, path, operation }) => `${kind} ${mount.path} "${path}" ${operation}`)).toEqual([
      'help cubbyhole/ "" help',
      'help identity/ "" help',
      'help secret/ "" help',
      'help token/ "" help',
    ]);
    expect(asked.map(({ capabilities }) => capabilities)).toEqual(Array(4).fill(['root']));
  });

  it('leaves out mounts no engine of this build serves, and keeps operation ids unique', async () => {
    await namespace.secretMounts.mount({ path: 'secret', type: 'kv' }, NO_TTLS);
    await namespace.secretMounts.mount({ path: 'other', type: 'kv' }, NO_TTLS);
    await namespace.secretMounts.mount({ path: 'gone', type: 'retired' }, NO_TTLS);
    const openapi = await document();
    expect(Object.keys(openapi.paths).sort()).toEqual(['/auth/token/lookup', '/other/data/{name}', '/secret/data/{name}', '/sys/internal/specs/openapi']);
    expect(asked.map(({ mount }) => mount.path)).not.toContain('gone/');
    const ids = Object.values(openapi.paths).map((item) => item.get?.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
