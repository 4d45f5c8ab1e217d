import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { MemoryBus } from '@svc/bus';
import { devConfig } from '@svc/config';
import { EngineHost, GATEWAY, type BackendFactory } from '@svc/engine-host';
import { Backend, type Operation, type Response } from '@svc/framework';
import { ServiceError, type ErrorKind } from '@svc/api-contract';
import { MemoryLockManager } from '@svc/locks';
import { DEFAULT_TELEMETRY, Metrics } from '@svc/metrics';
import { InmemPhysical } from '@svc/storage';
import { composeCore } from '../compose';
import type { Core } from '../core-parts';
import type { LogicalRequest, LogicalResult } from './logical';
import type { RequestHandler } from './request-handler';

/** Credentials a test engine issued and revoked: what its external system would have seen. */
const issued: string[] = [];
const revoked: string[] = [];

/** The engine service that runs the `service-login` auth method. */
const LOGIN_SERVICE = 'logins';

/** The least key/value engine: what the core mounts at secret/ (type kv) on first unseal. */
const keyValueBackend: BackendFactory = (_mount, { storage }) => {
  const write = async (path: string, data: Record<string, unknown>) => void (await storage.putJSON(path, data));
  return new Backend({
    type: 'kv',
    help: 'Stores values by path.',
    paths: [
      {
        pattern: '*path',
        synopsis: 'A value.',
        acceptsAnyFields: true,
        existenceCheck: async (_req, f) => (await storage.get(f.params.path)) !== null,
        operations: {
          read: {
            summary: 'Read a value.',
            handler: async (_req, f) => {
              const data = await storage.getJSON<Record<string, unknown>>(f.params.path);
              return data ? { data } : undefined;
            },
          },
          create: { summary: 'Write a value.', handler: (_req, f) => write(f.params.path, f.raw) },
          update: { summary: 'Write a value.', handler: (_req, f) => write(f.params.path, f.raw) },
        },
      },
    ],
  });
};

/** A secrets engine whose reads issue a leased credential, as a database engine's would. */
function leasingBackend(): Backend {
  return new Backend({
    type: 'leasing',
    help: 'Issues leased credentials.',
    secrets: {
      creds: {
        description: 'A credential.',
        revoke: async (_req, internal) => void revoked.push(String(internal.username)),
      },
    },
    paths: [
      {
        pattern: 'creds',
        synopsis: 'Issues a credential.',
        operations: {
          read: {
            summary: 'Issue a credential.',
            handler: async () => {
              const username = `user-${issued.length + 1}`;
              issued.push(username);
              return { data: { username }, secret: { type: 'creds', internalData: { username }, ttl: 600, renewable: false } };
            },
          },
        },
      },
    ],
  });
}

/** An auth method with a login path open to requests without a token. */
function openLoginBackend(): Backend {
  return new Backend({
    type: 'open-login',
    help: 'A login that needs no token.',
    paths: [
      { pattern: 'login', synopsis: 'Logs in.', operations: { update: { summary: 'Log in.', unauthenticated: true, handler: async () => ({ data: { welcome: true } }) } } },
      { pattern: 'closed', synopsis: 'Needs a token.', operations: { read: { summary: 'Read.', handler: async () => ({ data: {} }) } } },
      {
        pattern: 'token-login',
        synopsis: 'Logs in, answering the token to make.',
        fields: {
          bound: { type: 'comma-string-list', default: [], description: 'CIDR blocks for the token.' },
          alias: { type: 'string', default: '', description: 'Name the method vouches for.' },
        },
        operations: {
          update: {
            summary: 'Log in.',
            unauthenticated: true,
            handler: async (_req, f) => ({
              auth: {
                policies: ['reader'],
                displayName: 'tester',
                ttl: 60,
                renewable: true,
                metadata: { who: 'tester' },
                boundCidrs: f.get('bound'),
                ...(f.get<string>('alias') ? { alias: { name: f.get<string>('alias'), metadata: { who: 'tester' } } } : {}),
              },
            }),
          },
        },
      },
    ],
  });
}

function newCore(): Core {
  const localServices = new Map<string, EngineHost>();
  const core = composeCore({
    config: devConfig(),
    physical: new InmemPhysical(),
    bus: new MemoryBus(),
    locks: new MemoryLockManager(),
    logger: pino({ level: 'silent' }),
    engineTypes: [
      { type: 'kv', table: 'secret', runsIn: GATEWAY, factory: keyValueBackend },
      { type: 'leasing', table: 'secret', runsIn: GATEWAY, factory: leasingBackend },
      { type: 'open-login', table: 'auth', runsIn: GATEWAY, factory: openLoginBackend },
      { type: 'service-login', table: 'auth', runsIn: LOGIN_SERVICE, factory: openLoginBackend },
    ],
    localServices,
    metrics: new Metrics({ ...DEFAULT_TELEMETRY, disableHostname: true }),
  });
  // An auth method run by an engine service, which the all-in-one process hosts beside the core.
  localServices.set(LOGIN_SERVICE, new EngineHost(LOGIN_SERVICE, { 'service-login': openLoginBackend }, core.barrier, { locks: new MemoryLockManager(), logger: pino({ level: 'silent' }) }));
  return core;
}

let requests = 0;
function request(operation: Operation, path: string, options: { token?: string; data?: Record<string, unknown>; wrapTtl?: number; remoteAddress?: string } = {}): LogicalRequest {
  return { id: `request-${++requests}`, operation, path, data: options.data ?? {}, token: options.token, wrapTtl: options.wrapTtl, remoteAddress: options.remoteAddress };
}

async function failure(promise: Promise<unknown>): Promise<{ kind: ErrorKind; errors: string[] }> {
  const outcome = await promise.then(
    () => new Error('expected the request to fail'),
    (err: unknown) => err,
  );
  if (!(outcome instanceof ServiceError)) throw outcome;
  return { kind: outcome.kind, errors: outcome.errors };
}

function responseOf(result: LogicalResult): Response {
  if (result.type !== 'response' || !result.response) throw new Error(`expected a response, got ${JSON.stringify(result)}`);
  return result.response;
}

/** The body of a streamed response (sys/metrics) as text. */
async function streamed(response: Response): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response.stream!) chunks.push(Buffer.from(chunk as string));
  return Buffer.concat(chunks).toString('utf8');
}

describe('RequestHandler', () => {
  let core: Core;
  let handler: RequestHandler;
  let root: string;
  const call = (operation: Operation, path: string, options: Parameters<typeof request>[2] = {}) => handler.handle(request(operation, path, { token: root, ...options }));
  /** A token of the given policies (and options) made by the root token. */
  const tokenWith = async (data: Record<string, unknown>) => {
    return responseOf(await call('update', 'auth/token/create', { data })).token!.auth.client_token;
  };

  beforeEach(async () => {
    core = newCore();
    await core.start();
    const init = await core.seal.initialize({ secret_shares: 1, secret_threshold: 1 });
    root = init.root_token;
    await core.seal.submitUnsealKey(init.keys[0], false);
    handler = core.requestHandler;
    await call('update', 'secret/app', { data: { password: 'p4ss' } });
  });

  afterEach(() => core.stop());

  describe('tokens', () => {
    it('serves a request made with a known token', async () => {
      expect(responseOf(await call('read', 'secret/app')).data).toEqual({ password: 'p4ss' });
    });

    it('refuses an unknown token, and a request without one, as permission denied', async () => {
      expect(await failure(call('read', 'secret/app', { token: 'not-a-token' }))).toEqual({ kind: 'permission-denied', errors: ['permission denied'] });
      expect(await failure(handler.handle(request('read', 'secret/app')))).toEqual({ kind: 'permission-denied', errors: ['permission denied'] });
    });

    it('lets a request without a token reach an auth path, where only unauthenticated operations answer', async () => {
      await call('update', 'sys/auth/open', { data: { type: 'open-login' } });
      expect(responseOf(await handler.handle(request('update', 'auth/open/login'))).data).toEqual({ welcome: true });
      expect((await failure(handler.handle(request('read', 'auth/open/closed')))).kind).toBe('permission-denied');
    });

    it('ignores a token sent with a login to an auth method of an engine service, as to one of the gateway', async () => {
      await call('update', 'sys/auth/svc', { data: { type: 'service-login' } });
      const limited = await tokenWith({ policies: ['default'] });
      expect(responseOf(await handler.handle(request('update', 'auth/svc/login', { token: limited }))).data).toEqual({ welcome: true });
      expect(responseOf(await handler.handle(request('update', 'auth/svc/login', { token: 'no-longer-valid' }))).data).toEqual({ welcome: true });
      expect((await failure(handler.handle(request('read', 'auth/svc/closed', { token: limited })))).kind).toBe('permission-denied');
      expect((await failure(handler.handle(request('read', 'auth/svc/closed', { token: 'no-longer-valid' })))).kind).toBe('permission-denied');
    });

    it('answers a path no mount serves as unsupported, before looking at the token', async () => {
      expect((await failure(handler.handle(request('read', 'nowhere/at/all')))).kind).toBe('unsupported-path');
    });
  });

  describe('metrics', () => {
    /** sys/metrics as the Prometheus text, read with the root token. */
    const prometheus = async () => {
      const response = responseOf(await call('read', 'sys/metrics', { data: { format: 'prometheus' } }));
      expect(response.headers?.['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
      return streamed(response);
    };
    const requestCount = (text: string, labels: string) =>
      Number(new RegExp(`^svc_core_handle_request_count\\{${labels.replace(/[{}]/g, '\\$&')}\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);

    it('counts requests by namespace, mount and operation, and their failures', async () => {
      const labels = 'namespace="",mount="secret/",operation="read"';
      const before = requestCount(await prometheus(), labels);
      await call('read', 'secret/app');
      await call('read', 'secret/app');
      const reader = await tokenWith({ policies: ['default'] });
      await failure(call('read', 'secret/app', { token: reader }));
      const text = await prometheus();
      expect(requestCount(text, labels)).toBe(before + 3);
      expect(text).toMatch(new RegExp(`^svc_core_handle_request_errors\\{${labels}\\} 1$`, 'm'));
      expect(text).toMatch(/^svc_core_unsealed 1$/m);
      expect(text).toMatch(/^svc_token_count \d+$/m);
    });

    it('answers sys/metrics only to a token that may read it, in JSON by default', async () => {
      expect((await failure(handler.handle(request('read', 'sys/metrics')))).kind).toBe('permission-denied');
      const reader = await tokenWith({ policies: ['default'] });
      expect((await failure(call('read', 'sys/metrics', { token: reader }))).kind).toBe('permission-denied');
      await call('update', 'sys/policies/acl/metrics', { data: { policy: 'path "sys/metrics" { capabilities = ["read"] }' } });
      const scraper = await tokenWith({ policies: ['metrics'] });
      const response = responseOf(await call('read', 'sys/metrics', { token: scraper }));
      expect(response.headers?.['content-type']).toBe('application/json');
      const summary = JSON.parse(await streamed(response)) as { Gauges: { Name: string; Value: number }[]; Samples: { Name: string; Labels: Record<string, string> }[] };
      expect(summary.Gauges).toContainEqual({ Name: 'svc.core.unsealed', Value: 1, Labels: {} });
      expect(summary.Samples.some((sample) => sample.Name === 'svc.core.handle_request' && sample.Labels.mount === 'secret/')).toBe(true);
      expect(await failure(call('read', 'sys/metrics', { data: { format: 'xml' } }))).toEqual({
        kind: 'bad-request',
        errors: ['metric response format "xml" unknown: use "prometheus", or none for JSON'],
      });
    });
  });

  describe('ACL', () => {
    beforeEach(async () => {
      await call('update', 'sys/policies/acl/reader', { data: { policy: 'path "secret/app" { capabilities = ["read"] }\npath "sys/audit" { capabilities = ["read"] }' } });
      await call('update', 'sys/policies/acl/auditor', { data: { policy: 'path "sys/audit" { capabilities = ["read", "sudo"] }' } });
    });

    it("allows what the token's policies grant and denies the rest", async () => {
      const reader = await tokenWith({ policies: ['reader'] });
      expect(responseOf(await call('read', 'secret/app', { token: reader })).data).toEqual({ password: 'p4ss' });
      expect((await failure(call('update', 'secret/app', { token: reader, data: { password: 'x' } }))).kind).toBe('permission-denied');
      expect((await failure(call('read', 'secret/other', { token: reader }))).kind).toBe('permission-denied');
    });

    it('requires sudo on a sudo path', async () => {
      const reader = await tokenWith({ policies: ['reader'] });
      expect(await failure(call('read', 'sys/audit', { token: reader }))).toEqual({
        kind: 'permission-denied',
        errors: ['permission denied: this operation requires the sudo capability'],
      });
      const auditor = await tokenWith({ policies: ['auditor'] });
      expect((await call('read', 'sys/audit', { token: auditor })).type).toBe('response');
    });
  });

  describe('limited-use tokens', () => {
    it('spends a use per request and revokes the token after its last', async () => {
      const twice = await tokenWith({ policies: ['default'], num_uses: 2 });
      expect(responseOf(await call('read', 'auth/token/lookup-self', { token: twice })).data).toMatchObject({ num_uses: 1 });
      expect(responseOf(await call('read', 'auth/token/lookup-self', { token: twice })).data).toMatchObject({ num_uses: 0 });
      expect((await failure(call('read', 'auth/token/lookup-self', { token: twice }))).kind).toBe('permission-denied');
    });

    it('spends no use on a request the ACL refuses', async () => {
      const once = await tokenWith({ policies: ['default'], num_uses: 1 });
      expect((await failure(call('read', 'secret/app', { token: once }))).kind).toBe('permission-denied');
      expect(responseOf(await call('read', 'auth/token/lookup-self', { token: once })).data).toMatchObject({ num_uses: 0 });
      expect((await failure(call('read', 'auth/token/lookup-self', { token: once }))).kind).toBe('permission-denied');
    });
  });

  describe('leases', () => {
    beforeEach(async () => {
      issued.length = 0;
      revoked.length = 0;
      await call('update', 'sys/mounts/leasing', { data: { type: 'leasing' } });
    });

    it('registers a lease for a secret in the answer, and revoking it reaches the engine', async () => {
      const result = await call('read', 'leasing/creds');
      if (result.type !== 'response') throw new Error('expected a response');
      expect(result.lease).toEqual({ leaseId: expect.stringMatching(/^leasing\/creds\/.+/), ttl: 600 });
      const leaseId = result.lease!.leaseId;
      expect(responseOf(await call('update', 'sys/leases/lookup', { data: { lease_id: leaseId } })).data).toMatchObject({ id: leaseId });

      await call('update', 'sys/leases/revoke', { data: { lease_id: leaseId } });
      expect(revoked).toEqual(['user-1']);
      expect((await failure(call('update', 'sys/leases/lookup', { data: { lease_id: leaseId } }))).kind).toBe('bad-request');
    });

    it("revokes a token's leases with the token", async () => {
      const holder = await tokenWith({ policies: ['root'] });
      await call('read', 'leasing/creds', { token: holder });
      await call('update', 'auth/token/revoke', { data: { token: holder } });
      expect(revoked).toEqual(['user-1']);
    });
  });

  describe('logins', () => {
    beforeEach(async () => {
      await call('update', 'sys/auth/open', { data: { type: 'open-login' } });
      await call('update', 'sys/policies/acl/reader', { data: { policy: 'path "secret/*" { capabilities = ["read"] }' } });
    });
    const login = (options: Parameters<typeof request>[2] = {}) => handler.handle(request('update', 'auth/open/token-login', options));

    it("makes the token of a login's auth, which then serves requests as its policies allow", async () => {
      const issued = responseOf(await login()).token!;
      expect(issued.auth).toMatchObject({ policies: ['reader', 'default'], metadata: { who: 'tester' }, lease_duration: 60, orphan: true, mfa_requirement: null });
      expect(responseOf(await call('read', 'secret/app', { token: issued.auth.client_token })).data).toEqual({ password: 'p4ss' });
      expect(responseOf(await call('read', 'auth/token/lookup-self', { token: issued.auth.client_token })).data).toMatchObject({ path: 'auth/open/token-login', display_name: 'open-tester' });
    });

    it("gives a login's token its alias's entity, whose policies apply at once and whose disabling stops the token", async () => {
      const first = responseOf(await login({ data: { alias: 'tester' } })).token!.auth;
      expect(first.entity_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(responseOf(await login({ data: { alias: 'tester' } })).token!.auth.entity_id).toBe(first.entity_id);
      const token = first.client_token;
      expect((await failure(call('update', 'secret/app', { token, data: { password: 'x' } }))).kind).toBe('permission-denied');

      await call('update', 'sys/policies/acl/writer', { data: { policy: 'path "secret/*" { capabilities = ["update"] }' } });
      await call('update', `identity/entity/id/${first.entity_id}`, { data: { policies: 'writer' } });
      expect((await call('update', 'secret/app', { token, data: { password: 'x' } })).type).toBe('response');
      expect(responseOf(await call('read', 'auth/token/lookup-self', { token })).data).toMatchObject({ entity_id: first.entity_id, policies: ['reader', 'default'], identity_policies: ['writer'] });

      await call('update', `identity/entity/id/${first.entity_id}`, { data: { policies: '' } });
      expect((await failure(call('update', 'secret/app', { token, data: { password: 'y' } }))).kind).toBe('permission-denied');

      await call('update', `identity/entity/id/${first.entity_id}`, { data: { disabled: true } });
      expect(await failure(call('read', 'secret/app', { token }))).toEqual({ kind: 'permission-denied', errors: [`entity "${first.entity_id}" is disabled`] });
      expect(await failure(login({ data: { alias: 'tester' } }))).toEqual({ kind: 'permission-denied', errors: [`entity "${first.entity_id}" is disabled`] });
    });

    it('ignores a token sent with a login, even one that is not valid', async () => {
      expect(responseOf(await login({ token: 'not-a-token' })).token?.auth.client_token).toMatch(/^svs\./);
    });

    it("refuses a token bound to CIDR blocks from any other address", async () => {
      const token = responseOf(await login({ data: { bound: '10.0.0.0/8' } })).token!.auth.client_token;
      expect((await failure(handler.handle(request('read', 'secret/app', { token, remoteAddress: '127.0.0.1' })))).kind).toBe('permission-denied');
      expect(responseOf(await handler.handle(request('read', 'secret/app', { token, remoteAddress: '10.2.3.4' }))).data).toEqual({ password: 'p4ss' });
    });

    it('wraps a login: the wrapping token unwraps to the auth of a token that works', async () => {
      const result = await login({ wrapTtl: 60 });
      if (result.type !== 'wrapped') throw new Error('expected a wrapped answer');
      const unwrapped = responseOf(await call('update', 'sys/wrapping/unwrap', { token: result.wrapInfo.token })).raw as { auth: { client_token: string; accessor: string } };
      expect(result.wrapInfo.wrapped_accessor).toBe(unwrapped.auth.accessor);
      expect(responseOf(await call('read', 'secret/app', { token: unwrapped.auth.client_token })).data).toEqual({ password: 'p4ss' });
    });
  });

  describe('response wrapping', () => {
    it('wraps the answer into a single-use token, which unwraps to the answer once', async () => {
      const result = await call('read', 'secret/app', { wrapTtl: 60 });
      if (result.type !== 'wrapped') throw new Error('expected a wrapped answer');
      expect(result.wrapInfo).toMatchObject({ ttl: 60, creation_path: 'secret/app' });

      const unwrapped = responseOf(await call('update', 'sys/wrapping/unwrap', { token: result.wrapInfo.token }));
      expect(unwrapped.raw).toMatchObject({ data: { password: 'p4ss' } });
      expect((await failure(call('update', 'sys/wrapping/unwrap', { token: result.wrapInfo.token }))).kind).toBe('permission-denied');
    });

    it('answers a write that returns nothing unwrapped', async () => {
      expect(await call('update', 'secret/other', { data: { a: 1 }, wrapTtl: 60 })).toEqual({ type: 'response', response: undefined, lease: undefined });
    });
  });

  describe('audit', () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'request-handler-audit-'));
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('logs the request before it is served and the response after, the token hashed', async () => {
      const file = join(dir, 'audit.log');
      await call('update', 'sys/audit/file', { data: { type: 'file', options: { file_path: file } } });
      await call('read', 'secret/app');
      const lines = readFileSync(file, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { type: string; request: { path: string; client_token: string }; response?: { data: unknown } });
      const forRead = lines.filter((line) => line.request.path === 'secret/app');
      expect(forRead.map((line) => line.type)).toEqual(['request', 'response']);
      expect(forRead[0].request.client_token).toMatch(/^hmac-sha256:/);
      expect(JSON.stringify(forRead)).not.toContain(root);
      expect(forRead[1].response?.data).toEqual({ password: expect.stringMatching(/^hmac-sha256:/) });
    });

    it("logs a login's answer with the token it issued hashed", async () => {
      const file = join(dir, 'audit.log');
      await call('update', 'sys/audit/file', { data: { type: 'file', options: { file_path: file } } });
      await call('update', 'sys/auth/open', { data: { type: 'open-login' } });
      const token = responseOf(await handler.handle(request('update', 'auth/open/token-login'))).token!.auth.client_token;
      const text = readFileSync(file, 'utf8');
      expect(text).not.toContain(token);
      const answer = text.trim().split('\n').map((line) => JSON.parse(line) as { type: string; request: { path: string }; response?: { auth?: Record<string, unknown> } }).find((line) => line.type === 'response' && line.request.path === 'auth/open/token-login');
      expect(answer?.response?.auth).toMatchObject({ client_token: expect.stringMatching(/^hmac-sha256:/), display_name: 'open-tester', policies: ['reader', 'default'] });
    });

    it('logs a refused request with its error', async () => {
      const file = join(dir, 'audit.log');
      await call('update', 'sys/audit/file', { data: { type: 'file', options: { file_path: file } } });
      await failure(call('read', 'secret/app', { token: await tokenWith({ policies: ['default'] }) }));
      const last = JSON.parse(readFileSync(file, 'utf8').trim().split('\n').pop()!) as { type: string; error?: string };
      expect(last).toMatchObject({ type: 'response', error: 'permission denied: no policy grants access to this path' });
    });

    it('stops a request no device can log, before it reaches the engine', async () => {
      issued.length = 0;
      await call('update', 'sys/mounts/leasing', { data: { type: 'leasing' } });
      await call('update', 'sys/audit/full', { data: { type: 'file', options: { file_path: '/dev/full' } } });
      // The refusal is itself logged, which fails too: the client hears of that last failure.
      expect(await failure(call('read', 'leasing/creds'))).toEqual({ kind: 'internal', errors: ['audit: no audit device could log the response'] });
      expect(issued).toEqual([]);
    });
  });

  describe('seal state', () => {
    it('answers sealed, except the seal endpoints', async () => {
      await core.seal.sealNow();
      expect(await failure(call('read', 'secret/app'))).toEqual({ kind: 'sealed', errors: ['Service is sealed'] });
      expect(responseOf(await handler.handle(request('read', 'sys/seal-status'))).raw).toMatchObject({ sealed: true, initialized: true });
    });

    it('answers uninitialized, except init, seal status and health', async () => {
      const fresh = newCore();
      await fresh.start();
      try {
        const uninitialized = fresh.requestHandler;
        expect(await failure(uninitialized.handle(request('read', 'secret/app', { token: 'any' })))).toEqual({ kind: 'uninitialized', errors: ['Service is not initialized'] });
        expect(await failure(uninitialized.handle(request('update', 'sys/unseal', { data: { key: 'x' } })))).toMatchObject({ kind: 'uninitialized' });
        expect(responseOf(await uninitialized.handle(request('read', 'sys/init'))).raw).toEqual({ initialized: false });
      } finally {
        await fresh.stop();
      }
    });
  });
});
