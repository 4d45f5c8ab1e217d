import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { envelope } from '@svc/api-contract';
import { type RecordedRequest, StubApi, type StubReply } from '@svc/testing';
import { SvcApiError, SvcClient, SvcConnectionError } from './index';

let api: StubApi;
let address: string;
let requests: RecordedRequest[];

beforeAll(async () => {
  api = await StubApi.start();
  address = api.address;
});

afterAll(() => api.close());

beforeEach(() => {
  api.requests.length = 0;
  requests = api.requests;
  api.reply = () => ({ status: 204 });
});

function reply(answer: (request: RecordedRequest) => StubReply): void {
  api.reply = answer;
}

describe('SvcClient', () => {
  it("takes its address, token and namespace from SVC_* variables, else Vault's, given options first", async () => {
    reply(() => ({ status: 200, body: envelope('r1', { data: {} }) }));
    await SvcClient.fromEnv({}, { SVC_ADDR: address, SVC_TOKEN: 'svc-token', SVC_NAMESPACE: 'team', VAULT_TOKEN: 'vault-token' }).read('kv/a');
    await SvcClient.fromEnv({}, { VAULT_ADDR: address, VAULT_TOKEN: 'vault-token', VAULT_NAMESPACE: 'ops', SVC_TOKEN: '' }).read('kv/b');
    await SvcClient.fromEnv({ token: 'given', namespace: undefined }, { SVC_ADDR: address, SVC_TOKEN: 'svc-token', SVC_NAMESPACE: 'team' }).read('kv/c');
    expect(requests.map((request) => [request.url, request.headers['x-service-token'], request.headers['x-service-namespace']])).toEqual([
      ['/v1/kv/a', 'svc-token', 'team'],
      ['/v1/kv/b', 'vault-token', 'ops'],
      ['/v1/kv/c', 'given', undefined],
    ]);
    expect(SvcClient.fromEnv({}, {}).address).toBe('http://127.0.0.1:8200');
  });

  it('sends the request marker, token and namespace headers', async () => {
    reply(() => ({ status: 200, body: envelope('r1', { data: { a: 1 } }) }));
    const client = new SvcClient({ address, token: 's.token', namespace: 'team-a/' });
    await client.read('secret/foo');
    expect(requests[0].headers['x-service-request']).toBe('true');
    expect(requests[0].headers['x-service-token']).toBe('s.token');
    expect(requests[0].headers['x-service-namespace']).toBe('team-a/');
  });

  it('omits token and namespace headers when not configured', async () => {
    await new SvcClient({ address }).delete('secret/foo');
    expect(requests[0].headers).not.toHaveProperty('x-service-token');
    expect(requests[0].headers).not.toHaveProperty('x-service-namespace');
    expect(requests[0].headers['x-service-request']).toBe('true');
  });

  it('reads a secret under /v1/ and returns the envelope', async () => {
    reply(() => ({ status: 200, body: envelope('r1', { data: { password: 'p' } }) }));
    const secret = await new SvcClient({ address: `${address}/` }).read('/secret/foo');
    expect(requests[0]).toMatchObject({ method: 'GET', url: '/v1/secret/foo' });
    expect(secret?.data).toEqual({ password: 'p' });
  });

  it('returns null when reading or listing a missing path', async () => {
    reply(() => ({ status: 404, body: { errors: [] } }));
    const client = new SvcClient({ address });
    expect(await client.read('secret/missing')).toBeNull();
    expect(await client.list('secret/missing/')).toBeNull();
  });

  it('sends the LIST verb on the wire', async () => {
    reply(() => ({ status: 200, body: envelope('r1', { data: { keys: ['a', 'b/'] } }) }));
    const listed = await new SvcClient({ address }).list('secret/dir/');
    expect(requests[0]).toMatchObject({ method: 'LIST', url: '/v1/secret/dir/' });
    expect(listed?.data?.keys).toEqual(['a', 'b/']);
  });

  it('writes JSON with PUT and returns null for 204', async () => {
    const result = await new SvcClient({ address }).write('secret/foo', { user: 'u', n: 2 });
    expect(requests[0]).toMatchObject({ method: 'PUT', url: '/v1/secret/foo' });
    expect(requests[0].headers['content-type']).toBe('application/json');
    expect(JSON.parse(requests[0].body)).toEqual({ user: 'u', n: 2 });
    expect(result).toBeNull();
  });

  it('encodes path segments and query parameters', async () => {
    reply(() => ({ status: 200, body: {} }));
    await new SvcClient({ address }).request('GET', 'secret/a b?c', { query: { list: true, keys: ['x', 'y'], skip: undefined } });
    expect(requests[0].url).toBe('/v1/secret/a%20b%3Fc?list=true&keys=x%2Cy');
  });

  it('returns status, headers and body from request()', async () => {
    reply(() => ({ status: 200, body: { ok: true } }));
    const response = await new SvcClient({ address }).request('POST', 'sys/thing', { body: { a: 1 }, headers: { 'X-Extra': 'e' } });
    expect(requests[0].headers['x-extra']).toBe('e');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.body).toEqual({ ok: true });
  });

  it('maps an error status to SvcApiError with the errors list', async () => {
    reply(() => ({ status: 403, body: { errors: ['permission denied'] } }));
    const error = await new SvcClient({ address }).write('secret/foo', { a: 'b' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(SvcApiError);
    expect(error).toMatchObject({ status: 403, errors: ['permission denied'], method: 'PUT', path: '/v1/secret/foo' });
    expect((error as Error).message).toBe('PUT /v1/secret/foo: status 403: permission denied');
  });

  it('reports the start of a non-JSON error body', async () => {
    reply(() => ({ status: 502, raw: '<html>bad gateway</html>' }));
    const error = await new SvcClient({ address }).read('secret/foo').catch((err: unknown) => err);
    expect(error).toMatchObject({ status: 502, errors: ['<html>bad gateway</html>'] });
  });

  it('throws SvcConnectionError when nothing listens', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await new SvcClient({ address: `http://127.0.0.1:${port}` }).read('secret/foo').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(SvcConnectionError);
    expect((error as Error).message).toMatch(`cannot reach http://127.0.0.1:${port}: connect ECONNREFUSED`);
  });

  it('rejects an invalid address', () => {
    expect(() => new SvcClient({ address: 'not a url' })).toThrow('invalid service address "not a url"');
  });
});

describe('sys helpers', () => {
  const sealStatus = { type: 'shamir', initialized: true, sealed: true, t: 2, n: 3, progress: 1, nonce: 'n', version: '0.1.0' };

  it('reads the seal status', async () => {
    reply(() => ({ status: 200, body: sealStatus }));
    expect(await new SvcClient({ address }).sys.sealStatus()).toEqual(sealStatus);
    expect(requests[0]).toMatchObject({ method: 'GET', url: '/v1/sys/seal-status' });
  });

  it('initializes with the given shares', async () => {
    reply(() => ({ status: 200, body: { keys: ['k1'], keys_base64: ['b1'], root_token: 's.root' } }));
    const result = await new SvcClient({ address }).sys.init({ secret_shares: 1, secret_threshold: 1, pgp_keys: ['pk'] });
    expect(requests[0]).toMatchObject({ method: 'PUT', url: '/v1/sys/init' });
    expect(JSON.parse(requests[0].body)).toEqual({ secret_shares: 1, secret_threshold: 1, pgp_keys: ['pk'] });
    expect(result.root_token).toBe('s.root');
  });

  it('unseals with a key or resets progress', async () => {
    reply(() => ({ status: 200, body: sealStatus }));
    const client = new SvcClient({ address });
    await client.sys.unseal('share-1');
    await client.sys.unseal({ reset: true });
    expect(requests.map((request) => [request.method, request.url, JSON.parse(request.body)])).toEqual([
      ['PUT', '/v1/sys/unseal', { key: 'share-1' }],
      ['PUT', '/v1/sys/unseal', { reset: true }],
    ]);
  });

  it('seals', async () => {
    await new SvcClient({ address, token: 't' }).sys.seal();
    expect(requests[0]).toMatchObject({ method: 'PUT', url: '/v1/sys/seal' });
  });

  it('returns the health body whatever the status code', async () => {
    reply(() => ({ status: 503, body: { initialized: true, sealed: true, standby: false } }));
    const health = await new SvcClient({ address }).sys.health({ standbyok: true });
    expect(requests[0].url).toBe('/v1/sys/health?standbyok=true');
    expect(health).toEqual({ initialized: true, sealed: true, standby: false, status: 503 });
  });

  it('throws SvcApiError when health answers an error without a health body', async () => {
    reply(() => ({ status: 500, body: { errors: ['internal error'] } }));
    await expect(new SvcClient({ address }).sys.health()).rejects.toMatchObject({ status: 500, errors: ['internal error'] });
  });

  it('lists, enables and disables mounts', async () => {
    const mount = { type: 'kv', description: '', accessor: 'kv_1', config: {}, options: { version: '2' }, local: false, seal_wrap: false };
    reply((request) => (request.method === 'GET' ? { status: 200, body: { 'secret/': mount, data: { 'secret/': mount } } } : { status: 204 }));
    const client = new SvcClient({ address });
    expect(await client.sys.mounts()).toEqual({ 'secret/': mount });
    await client.sys.enableMount('/kv2/', { type: 'kv', options: { version: '2' }, description: 'team' });
    await client.sys.disableMount('kv2/');
    expect(requests.slice(1).map((request) => [request.method, request.url, request.body && JSON.parse(request.body)])).toEqual([
      ['POST', '/v1/sys/mounts/kv2', { type: 'kv', options: { version: '2' }, description: 'team' }],
      ['DELETE', '/v1/sys/mounts/kv2', ''],
    ]);
  });
});

describe('retries, timeouts and wrapping', () => {
  it('retries a 5xx and a 412 with backoff, then gives the answer', async () => {
    const statuses = [503, 412, 200];
    reply(() => {
      const status = statuses.shift()!;
      return status === 200 ? { status, body: envelope('r', { data: { a: 1 } }) } : { status, body: { errors: ['not yet'] } };
    });
    const secret = await new SvcClient({ address, maxRetries: 2, retryWaitMs: 1 }).read('secret/a');
    expect(secret?.data).toEqual({ a: 1 });
    expect(requests).toHaveLength(3);
  });

  it('gives up after maxRetries with the last error, and never retries a 4xx or a 501', async () => {
    reply(() => ({ status: 500, body: { errors: ['broken'] } }));
    await expect(new SvcClient({ address, maxRetries: 1, retryWaitMs: 1 }).write('secret/a', {})).rejects.toMatchObject({ status: 500, errors: ['broken'] });
    expect(requests).toHaveLength(2);
    requests.length = 0;
    for (const status of [400, 501]) {
      reply(() => ({ status, body: { errors: ['no'] } }));
      await expect(new SvcClient({ address, maxRetries: 3, retryWaitMs: 1 }).write('secret/a', {})).rejects.toMatchObject({ status });
    }
    expect(requests).toHaveLength(2);
  });

  it('aborts a request that takes longer than timeoutMs', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentAddress = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    try {
      await expect(new SvcClient({ address: silentAddress, timeoutMs: 100, maxRetries: 0 }).read('secret/a')).rejects.toBeInstanceOf(SvcConnectionError);
    } finally {
      silent.close();
    }
  });

  it('asks for a wrapped answer with wrapTtl, for every request or one client derived for it', async () => {
    reply(() => ({ status: 200, body: envelope('r', {}) }));
    const client = new SvcClient({ address });
    await client.withOptions({ wrapTtl: '5m' }).read('secret/a');
    await client.read('secret/a');
    expect(requests[0].headers['x-service-wrap-ttl']).toBe('5m');
    expect(requests[1].headers).not.toHaveProperty('x-service-wrap-ttl');
  });
});
