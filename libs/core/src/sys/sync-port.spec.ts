import type { EngineRequest } from '@svc/engine-host';
import type { Capability, Caller, Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { engineRequest, testMount, unsealedBarrier } from '@svc/testing';
import type { AccessRequest } from '../access/authorizer';
import { NamespaceRegistry } from '../namespaces/registry';
import { tokenEntry } from '../testing/fixtures';
import { syncPort } from './sync-port';

describe('the secret sync feature port', () => {
  const sys = testMount('system', { path: 'sys/' });
  /** What the authorizer answers by the token's first policy; `refused` throws as a refused token does. */
  const answers: Record<string, ReadonlySet<Capability> | Error> = {
    reader: new Set<Capability>(['read']),
    root: new Set<Capability>(['root']),
    lister: new Set<Capability>(['list']),
    refused: ServiceError.forbidden(),
    broken: new Error('storage failed'),
  };
  let asked: AccessRequest[];
  let dispatched: EngineRequest[];
  let port: ReturnType<typeof syncPort>;
  let namespaces: NamespaceRegistry;

  const caller = (accessor: string): Caller => ({ tokenAccessor: accessor, policies: [], entityId: '', displayName: '', namespace: '', meta: {} });
  const request = (accessor?: string): Request => ({ ...engineRequest(sys, 'update', 'sync/destinations/codehost/gh/associations/set'), ...(accessor ? { caller: caller(accessor) } : {}) });

  beforeEach(async () => {
    const barrier = unsealedBarrier();
    namespaces = new NamespaceRegistry(barrier);
    await namespaces.load('2');
    asked = [];
    dispatched = [];
    port = syncPort({
      barrier,
      router: {
        namespaceOf: () => namespaces.root,
        baseMessage: (req) => ({ requestId: req.requestId, data: {}, caller: req.caller, capabilities: [...req.capabilities] }),
        dispatch: async (message) => {
          dispatched.push(message);
          return { ok: true, response: { data: { data: { a: 1 } } } };
        },
      },
      tokens: {
        lookupAccessor: async (accessor) => (accessor in answers ? { key: accessor, entry: tokenEntry([accessor]) } : null),
      },
      authorizer: {
        capabilities: (access) => {
          asked.push(access);
          const answer = answers[access.token!.policies[0]];
          if (answer instanceof Error) throw answer;
          return answer;
        },
      },
    });
  });

  it('finds a secrets mount of the request namespace by its path', () => {
    expect(port.secretMount(request(), 'secret/')).toMatchObject({ path: 'secret/', type: 'kv' });
    expect(port.secretMount(request(), 'nothing/')).toBeUndefined();
  });

  it("lets a caller read what its token's capabilities allow: read, or root", async () => {
    expect(await port.mayRead(request('reader'), 'secret/data/db')).toBe(true);
    expect(await port.mayRead(request('root'), 'secret/data/db')).toBe(true);
    expect(asked.map(({ path, operation, namespace }) => [path, operation, namespace.path])).toEqual([
      ['secret/data/db', 'read', ''],
      ['secret/data/db', 'read', ''],
    ]);
  });

  it('answers no to a caller without a token, with an unknown one, without read, or refused', async () => {
    expect(await port.mayRead(request(), 'secret/data/db')).toBe(false);
    expect(await port.mayRead(request('unknown'), 'secret/data/db')).toBe(false);
    expect(await port.mayRead(request('lister'), 'secret/data/db')).toBe(false);
    expect(await port.mayRead(request('refused'), 'secret/data/db')).toBe(false);
    await expect(port.mayRead(request('broken'), 'secret/data/db')).rejects.toThrow('storage failed');
  });

  it("reads through the mount's engine as root, as the caller's request", async () => {
    const mount = port.secretMount(request(), 'secret/')!;
    const req = request('reader');
    expect(await port.readThrough(req, mount, 'data/db')).toEqual({ ok: true, response: { data: { data: { a: 1 } } } });
    expect(dispatched).toEqual([expect.objectContaining({ kind: 'operation', requestId: req.requestId, caller: req.caller, mount, path: 'data/db', operation: 'read', capabilities: ['root'] })]);
  });
});
