/**
 * Listener configuration end to end: several listeners at once, TLS, request size limits, the
 * X-Service-Request requirement, and configuration errors at start.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { api, createTestCa, initAndUnseal, startServerProcess, startTopology, type Topology } from '@svc/testing';

describe('listeners', () => {
  let dir: string;
  let topology: Topology;
  let plainUrl: string;
  let tlsUrl: string;
  let limitedUrl: string;
  let ca: string;
  let rootToken: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-listeners-'));
    const testCa = createTestCa(dir, 'svc listeners test CA');
    const { cert, key } = testCa.issue('listener', ['127.0.0.1']);
    ca = readFileSync(testCa.caCert, 'utf8');
    topology = await startTopology('all-in-one', {
      listeners: [
        'listener "tcp" {\n address = "127.0.0.1:0"\n tls_disable = true\n}',
        `listener "tcp" {\n address = "127.0.0.1:0"\n tls_cert_file = "${cert}"\n tls_key_file = "${key}"\n tls_min_version = "tls12"\n}`,
        'listener "tcp" {\n address = "127.0.0.1:0"\n tls_disable = true\n max_request_size = 1024\n require_request_header = true\n}',
      ],
    });
    const [plain, tls, limited] = topology.processes[0].addresses;
    plainUrl = `http://${plain}`;
    tlsUrl = `https://${tls}`;
    limitedUrl = `http://${limited}`;
    ({ rootToken } = await initAndUnseal(plainUrl));
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a TLS listener serves the same API with Strict-Transport-Security', async () => {
    const res = await api(tlsUrl, 'GET', '/v1/sys/mounts', { token: rootToken, ca });
    expect(res.status).toBe(200);
    expect(res.headers['strict-transport-security']).toMatch(/max-age=/);
    expect(res.headers['cache-control']).toBe('no-store');
    const plain = await api(plainUrl, 'GET', '/v1/sys/mounts', { token: rootToken });
    expect(plain.headers['strict-transport-security']).toBeUndefined();
  });

  test('LIST works on every listener, with that listener\'s headers and rules', async () => {
    expect((await api(plainUrl, 'PUT', '/v1/secret/listed/a', { token: rootToken, body: { v: 1 } })).status).toBe(204);
    const overTls = await api<{ data: { keys: string[] } }>(tlsUrl, 'LIST', '/v1/secret/listed/', { token: rootToken, ca });
    expect(overTls.status).toBe(200);
    expect(overTls.body.data.keys).toEqual(['a']);
    expect(overTls.headers['strict-transport-security']).toMatch(/max-age=/);
    const unmarked = await api(limitedUrl, 'LIST', '/v1/secret/listed/', { token: rootToken });
    expect(unmarked.status).toBe(412);
    const marked = await api(limitedUrl, 'LIST', '/v1/secret/listed/', { token: rootToken, headers: { 'x-service-request': 'true' } });
    expect(marked.status).toBe(200);
  });

  test('TLS below the minimum version is refused', () => {
    const host = tlsUrl.replace('https://', '');
    expect(() =>
      execFileSync('openssl', ['s_client', '-connect', host, '-tls1_1'], { input: '', stdio: ['pipe', 'pipe', 'pipe'], timeout: 10_000 }),
    ).toThrow();
  });

  test('the default request limit is 32 MiB: a bigger body is 413 and nothing is written', async () => {
    const big = JSON.stringify({ blob: 'x'.repeat(32 * 1024 * 1024) });
    const res = await api(plainUrl, 'PUT', '/v1/secret/too-big', { token: rootToken, rawBody: big });
    expect(res.status).toBe(413);
    expect(res.body.errors[0]).toMatch(/too large/);
    expect((await api(plainUrl, 'GET', '/v1/secret/too-big', { token: rootToken })).status).toBe(404);
    const fits = JSON.stringify({ blob: 'x'.repeat(1024 * 1024) });
    expect((await api(plainUrl, 'PUT', '/v1/secret/fits', { token: rootToken, rawBody: fits })).status).toBe(204);
  });

  test('max_request_size and require_request_header apply to their own listener only', async () => {
    const headers = { 'x-service-request': 'true' };
    const missing = await api(limitedUrl, 'GET', '/v1/sys/mounts', { token: rootToken });
    expect(missing.status).toBe(412);
    expect(missing.body.errors[0]).toMatch(/X-Service-Request/);
    expect((await api(limitedUrl, 'GET', '/v1/sys/mounts', { token: rootToken, headers })).status).toBe(200);
    const tooBig = await api(limitedUrl, 'PUT', '/v1/secret/limited', { token: rootToken, headers, body: { blob: 'x'.repeat(2000) } });
    expect(tooBig.status).toBe(413);
    expect((await api(plainUrl, 'PUT', '/v1/secret/limited', { token: rootToken, body: { blob: 'x'.repeat(2000) } })).status).toBe(204);
  });
});

describe('server configuration errors', () => {
  test.each([
    ['unknown storage type', 'listener "tcp" {\n address = "127.0.0.1:0"\n tls_disable = true\n}\nstorage "floppy" {}\n', /floppy/],
    ['TLS without a certificate', 'listener "tcp" {\n address = "127.0.0.1:0"\n}\nstorage "inmem" {}\n', /tls_cert_file/],
    ['malformed HCL', 'listener "tcp" {\n address = \n', /config\.hcl/],
  ])('%s fails at start with a message naming the problem', async (_name, text, message) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-badconfig-'));
    const file = path.join(dir, 'config.hcl');
    writeFileSync(file, text);
    try {
      await expect(startServerProcess('bad', [`-config=${file}`], 20_000)).rejects.toThrow(message);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
