/**
 * LIST on the wire, end to end (Node's HTTP parser refuses the method; libs/edge/src/list-method.ts):
 * after other requests on kept-alive connections, pipelined, split, with bodies, over TLS, under
 * load through two gateway workers, from raw sockets, Node's keep-alive agent, axios on it
 * and fetch (undici). And a body announced over the request limit, answered 413 at once.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import axios from 'axios';
import { api, createTestCa, initAndUnseal, RawHttpClient, startTopology, type RawAnswer, type Topology } from '@svc/testing';

const KEYS = ['k0', 'k1', 'k2'];

function keysOf(answer: RawAnswer | undefined): unknown {
  return answer && answer.status === 200 ? (JSON.parse(answer.body) as { data: { keys: string[] } }).data.keys : answer?.status;
}

/** The promise's value, or undefined if it takes longer than `ms`. */
async function within<T>(ms: number, promise: Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

function statusesOf(answers: (RawAnswer | undefined)[]): (number | undefined)[] {
  return answers.map((answer) => answer?.status);
}

describe('LIST on the wire, two gateway workers', () => {
  let dir: string;
  let topology: Topology;
  let url: string;
  let tlsUrl: string;
  let ca: string;
  let token: string;
  /** The workers (by pid) that logged a LIST request. */
  const listedBy = new Set<number>();

  /** A request's bytes as a client sends them. */
  const wire = (method: string, target: string, extra = '', body = '') =>
    `${method} ${target} HTTP/1.1\r\nHost: svc\r\nX-Vault-Token: ${token}\r\n${extra}${body ? `Content-Length: ${Buffer.byteLength(body)}\r\n` : ''}\r\n${body}`;
  const LIST = () => wire('LIST', '/v1/kv/dir/');

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-list-method-'));
    const testCa = createTestCa(dir, 'svc list-method test CA');
    const { cert, key } = testCa.issue('listener', ['127.0.0.1']);
    ca = readFileSync(testCa.caCert, 'utf8');
    topology = await startTopology('all-in-one', {
      workers: 2,
      listeners: [
        'listener "tcp" {\n address = "127.0.0.1:0"\n tls_disable = true\n}',
        `listener "tcp" {\n address = "127.0.0.1:0"\n tls_cert_file = "${cert}"\n tls_key_file = "${key}"\n}`,
      ],
      onLog: (_process, line) => {
        if (line.includes('"method":"LIST"')) listedBy.add((JSON.parse(line) as { pid: number }).pid);
      },
    });
    const [plain, tls] = topology.processes[0].addresses;
    url = `http://${plain}`;
    tlsUrl = `https://${tls}`;
    ({ rootToken: token } = await initAndUnseal(url));
    expect((await api(url, 'POST', '/v1/sys/mounts/kv', { token, body: { type: 'kv', options: { version: '1' } } })).status).toBe(204);
    for (const key of KEYS) expect((await api(url, 'PUT', `/v1/kv/dir/${key}`, { token, body: { v: key } })).status).toBe(204);
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('after a GET on a kept-alive connection, from a raw socket, over TLS too', async () => {
    for (const client of [RawHttpClient.connect(url), RawHttpClient.connect(tlsUrl, { ca })]) {
      // sys/metrics is answered from a stream.
      for (const target of ['/v1/sys/health', '/v1/sys/metrics?format=prometheus', '/v1/kv/dir/k0']) {
        await client.send(wire('GET', target));
        expect((await client.answer())?.status).toBe(200);
        await client.send(LIST());
        const list = await client.answer();
        expect(keysOf(list)).toEqual(KEYS);
        expect(list?.headers.connection).not.toBe('close');
      }
      client.end();
    }
  });

  test("after a GET on a kept-alive connection, from Node's keep-alive agent (axios's transport) and from fetch (undici)", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = (method: string, target: string) =>
      new Promise<{ status: number; text: string; reusedSocket: boolean }>((resolve, reject) => {
        const req = request(new URL(target, url), { method, agent, headers: { 'x-vault-token': token }, timeout: 10_000 }, (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text, reusedSocket: req.reusedSocket }));
        });
        req.on('timeout', () => req.destroy(new Error(`${method} ${target}: no answer in 10 s`)));
        req.on('error', reject);
        req.end();
      });
    try {
      expect((await send('GET', '/v1/sys/health')).status).toBe(200);
      for (let i = 0; i < 5; i++) {
        const list = await send('LIST', '/v1/kv/dir/');
        expect([list.status, list.reusedSocket, (JSON.parse(list.text) as { data: { keys: string[] } }).data.keys]).toEqual([200, true, KEYS]);
        expect((await send('GET', '/v1/kv/dir/k0')).reusedSocket).toBe(true);
      }
    } finally {
      agent.destroy();
    }
    for (let i = 0; i < 5; i++) {
      expect((await fetch(`${url}/v1/sys/health`, { signal: AbortSignal.timeout(10_000) })).status).toBe(200);
      const list = await fetch(`${url}/v1/kv/dir/`, { method: 'LIST', headers: { 'x-vault-token': token }, signal: AbortSignal.timeout(10_000) });
      expect([list.status, ((await list.json()) as { data: { keys: string[] } }).data.keys]).toEqual([200, KEYS]);
    }
  });

  test('after a GET, from axios on a kept-alive agent, as Vault clients built on it send it (hashi-vault-js)', async () => {
    const httpAgent = new Agent({ keepAlive: true, maxSockets: 1 });
    const client = axios.create({ baseURL: url, httpAgent, timeout: 10_000, headers: { 'X-Vault-Token': token } });
    try {
      for (let i = 0; i < 3; i++) {
        expect((await client.get('/v1/sys/health')).status).toBe(200);
        const list = await client.request<{ data: { keys: string[] } }>({ method: 'LIST', url: '/v1/kv/dir/' });
        expect([list.status, list.data.data.keys]).toEqual([200, KEYS]);
      }
    } finally {
      httpAgent.destroy();
    }
  });

  test('pipelined in one write: GET, GET, LIST; a POST with a body, then a LIST', async () => {
    const client = RawHttpClient.connect(url);
    await client.send(wire('GET', '/v1/sys/health') + wire('GET', '/v1/kv/dir/k0') + LIST());
    const answers = await client.answers(3);
    expect(statusesOf(answers)).toEqual([200, 200, 200]);
    expect(keysOf(answers[2])).toEqual(KEYS);
    await client.send(wire('POST', '/v1/kv/other', '', '{"v":"posted"}') + LIST());
    const [posted, list] = await client.answers(2);
    expect(posted?.status).toBe(204);
    expect(keysOf(list)).toEqual(KEYS);
    client.end();
    expect((await api(url, 'GET', '/v1/kv/other', { token })).body.data).toEqual({ v: 'posted' });
  });

  test('split across packets byte by byte, and with a body, from a raw socket and from fetch', async () => {
    const client = RawHttpClient.connect(url);
    await client.send(wire('GET', '/v1/sys/health'), ...LIST(), wire('LIST', '/v1/kv/dir/', '', '{"ignored":true}'));
    const [health, ...lists] = await client.answers(3);
    expect([health?.status, ...lists.map(keysOf)]).toEqual([200, KEYS, KEYS]);
    client.end();
    const withBody = await fetch(`${url}/v1/kv/dir/`, { method: 'LIST', headers: { 'x-vault-token': token }, body: '{}', signal: AbortSignal.timeout(10_000) });
    expect([withBody.status, ((await withBody.json()) as { data: { keys: string[] } }).data.keys]).toEqual([200, KEYS]);
  });

  test('many at once under load, through both workers: every one answered, with the right keys', async () => {
    // 16 connections each pipelining 20 requests, half of them LISTs, and 100 fetches beside them.
    const pipelined = Array.from({ length: 16 }, async () => {
      const client = RawHttpClient.connect(url);
      const requests = Array.from({ length: 10 }, () => wire('GET', '/v1/kv/dir/k1') + LIST()).join('');
      await client.send(requests);
      const answers = await client.answers(20);
      client.end();
      return answers.map((answer, i) => (i % 2 === 0 ? answer?.body : keysOf(answer)));
    });
    const fetched = Array.from({ length: 100 }, async () => {
      const res = await fetch(`${url}/v1/kv/dir/`, { method: 'LIST', headers: { 'x-vault-token': token }, signal: AbortSignal.timeout(30_000) });
      return [res.status, ((await res.json()) as { data: { keys: string[] } }).data.keys];
    });
    const expected = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? expect.stringContaining('"data":{"v":"k1"}') : KEYS));
    for (const answers of await Promise.all(pipelined)) expect(answers).toEqual(expected);
    for (const answer of await Promise.all(fetched)) expect(answer).toEqual([200, KEYS]);
    expect(listedBy.size).toBe(2);
  });
});

describe('a body announced over the request limit', () => {
  let topology: Topology;
  let url: string;
  let token: string;
  /** 33 MiB: over the default limit of 32 MiB. */
  const head = (extra: string, version = '1.1') =>
    `PUT /v1/kv/big HTTP/${version}\r\nHost: svc\r\nX-Vault-Token: ${token}\r\n${extra}Content-Length: 34603008\r\n\r\n{"v":"xx`;

  beforeAll(async () => {
    topology = await startTopology('all-in-one');
    url = topology.urls[0];
    ({ rootToken: token } = await initAndUnseal(url));
    expect((await api(url, 'POST', '/v1/sys/mounts/kv', { token, body: { type: 'kv' } })).status).toBe(204);
  }, 120_000);

  afterAll(() => topology?.stop());

  test.each([
    ['on a kept-alive connection', head('')],
    ['on a connection the client closes after it', head('Connection: close\r\n')],
    ['in HTTP/1.0', head('', '1.0')],
  ])('is answered 413 from its head, at once, %s', async (_how, request) => {
    const client = RawHttpClient.connect(url);
    await client.send(request);
    // Only 8 bytes of the body ever come: an answer that waited for the rest would come after the
    // server's 10 s wait, not within 5 s.
    const answer = await within(5_000, client.answer());
    expect(answer?.status).toBe(413);
    expect(answer?.body).toMatch(/request body too large/);
    client.end();
  });

  test('is answered 413 to a client that goes on sending it and reads the answer only then, without a reset', async () => {
    const client = RawHttpClient.connect(url);
    client.pause();
    await client.send(head('Connection: close\r\n'));
    const chunk = Buffer.alloc(256 * 1024, 'x');
    await client.send(...Array.from({ length: 16 }, () => chunk));
    client.resume();
    const answer = await client.answer();
    expect(answer?.status).toBe(413);
    await client.closed;
    expect((await api(url, 'GET', '/v1/kv/big', { token })).status).toBe(404);
  });
});
