/**
 * The HTTP edge under faults and bad input (issue 11): slow and malformed requests, large values,
 * deep JSON, control characters in names and ids, and how a 500 is logged, in both topologies.
 */
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { api, initAndUnseal, startTopology, type Topology, type TopologyKind } from '@svc/testing';

interface Answer {
  status: number;
  text: string;
}

/** One request, resolved with its answer once the whole body has arrived. */
function send(url: string, method: string, path: string, options: { token?: string; body?: Buffer; agent?: Agent; onSent?: () => void } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = {};
    if (options.token) headers['x-service-token'] = options.token;
    if (options.body) headers['content-length'] = options.body.length;
    const req = request(new URL(path, url), { method, headers, agent: options.agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    if (options.onSent) req.on('finish', options.onSent);
    req.end(options.body);
  });
}

/** A listener with short timeouts, so a slow client is cut off within the test. */
const SHORT_TIMEOUTS_LISTENER = `listener "tcp" {
  address = "127.0.0.1:0"
  tls_disable = true
  http_read_header_timeout = "1s"
  http_read_timeout = "4s"
}`;

interface RawExchange {
  /** Everything the server sent until it closed the connection. */
  received: string;
  /** The request bytes written before the server closed. */
  written: number;
}

/**
 * Writes `head` on a new connection, then `trickle` (if any) every 100 ms, as a slow client
 * would, until the server closes the connection.
 */
function rawExchange(url: string, head: string, trickle?: string): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    let written = 0;
    const write = (text: string) => {
      if (socket.writable) written += text.length;
      socket.write(text);
    };
    const timer = trickle === undefined ? undefined : setInterval(() => write(trickle), 100);
    socket.on('connect', () => write(head));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined); // a reset after the answer: the close still follows
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ received: Buffer.concat(chunks).toString('latin1'), written });
    });
    socket.setTimeout(30_000, () => reject(new Error('the server kept the connection open')));
  });
}

function statusOf(exchange: RawExchange): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(exchange.received)?.[1] ?? 0);
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('the HTTP edge, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let rootToken: string;

  beforeAll(async () => {
    topology = await startTopology(kind, { listeners: [SHORT_TIMEOUTS_LISTENER] });
    url = topology.urls[0];
    ({ rootToken } = await initAndUnseal(url));
  }, 120_000);

  afterAll(() => topology?.stop());

  test('a request head that never ends is answered 408 and closed after the head timeout', async () => {
    const partial = await rawExchange(url, 'GET /v1/sys/health HTTP/1.1\r\nHost: svc\r\n');
    expect(statusOf(partial)).toBe(408);
    // Slowloris: a header line every 100 ms keeps the connection busy but never ends the head.
    const dribbled = await rawExchange(url, 'GET /v1/sys/health HTTP/1.1\r\nHost: svc\r\n', 'X-Slow: 1\r\n');
    expect(statusOf(dribbled)).toBe(408);
  });

  test('a body that never completes is answered 408 and closed after the request timeout', async () => {
    const head = `PUT /v1/secret/slow HTTP/1.1\r\nHost: svc\r\nX-Service-Token: ${rootToken}\r\nContent-Length: 100000\r\n\r\n{"a":"`;
    const exchange = await rawExchange(url, head, 'x');
    expect(statusOf(exchange)).toBe(408);
    expect((await api(url, 'GET', '/v1/secret/slow', { token: rootToken })).status).toBe(404);
  });

  test('a malformed chunked body is answered 400 and the connection closed', async () => {
    const head = `PUT /v1/secret/chunked HTTP/1.1\r\nHost: svc\r\nX-Service-Token: ${rootToken}\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const exchange = await rawExchange(url, `${head}ZZ\r\n{"a":"b"}\r\n0\r\n\r\n`);
    expect(statusOf(exchange)).toBe(400);
    expect(exchange.received).toMatch(/malformed request body/);
    // A well-formed chunked body is still read.
    const good = await rawExchange(url, `${head.replace('HTTP/1.1\r\n', 'HTTP/1.1\r\nConnection: close\r\n')}9\r\n{"a":"b"}\r\n0\r\n\r\n`);
    expect(statusOf(good)).toBe(204);
  });

  test('a transfer coding other than chunked is answered 400 and the connection closed', async () => {
    const exchange = await rawExchange(url, `PUT /v1/secret/gzip HTTP/1.1\r\nHost: svc\r\nX-Service-Token: ${rootToken}\r\nTransfer-Encoding: gzip\r\n\r\nabc`);
    expect(statusOf(exchange)).toBe(400);
    expect(exchange.received).toMatch(/Transfer-Encoding/);
  });

  test('CONNECT is answered 405', async () => {
    const exchange = await rawExchange(url, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(statusOf(exchange)).toBe(405);
  });

  test('two Host headers are answered 400', async () => {
    const exchange = await rawExchange(url, 'GET /v1/sys/health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n');
    expect(statusOf(exchange)).toBe(400);
    expect(exchange.received).toMatch(/more than one Host header/);
  });

  test('an HTTP/1.1 request without Host, or with an Expect other than 100-continue, is refused naming it', async () => {
    const hostless = await rawExchange(url, 'GET /v1/sys/health HTTP/1.1\r\n\r\n');
    expect(statusOf(hostless)).toBe(400);
    expect(hostless.received).toMatch(/missing Host header/);
    const expecting = await rawExchange(url, 'GET /v1/sys/health HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n');
    expect(statusOf(expecting)).toBe(417);
    expect(expecting.received).toMatch(/unsupported Expect .*200-ok/);
  });

  test('JSON nested 10,000 levels deep is answered 400 naming the limit, wherever it is sent', async () => {
    const deep = `{"data":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`;
    for (const path of ['/v1/secret/deep', '/v1/cubbyhole/deep', '/v1/sys/policies/acl/deep']) {
      const res = await api(url, 'PUT', path, { token: rootToken, rawBody: deep });
      expect(res.status).toBe(400);
      expect(res.body.errors[0]).toMatch(/max_json_depth \(500\)/);
    }
    const fine = `{"data":${'{"a":'.repeat(100)}1${'}'.repeat(100)}}`;
    expect((await api(url, 'PUT', '/v1/secret/nested', { token: rootToken, rawBody: fine })).status).toBe(204);
  });

  test('a NUL or other control character in a path segment is answered 400, never 500', async () => {
    const paths = ['secret/a%00b', 'cubbyhole/a%00b', 'sys/policies/acl/a%00b', 'sys/policy/a%00b', 'sys/policies/password/a%00b', 'auth/token/roles/a%00b', 'secret/a%0D%0Ab', 'sys/namespaces/a%0Ab'];
    for (const path of paths) {
      for (const method of ['GET', 'PUT']) {
        const res = await api(url, method, `/v1/${path}`, { token: rootToken, body: method === 'PUT' ? { a: 'b' } : undefined });
        expect([path, method, res.status]).toEqual([path, method, 400]);
        expect(res.body.errors[0]).toMatch(/control character/);
      }
    }
  });

  test('a name of 3 KB or 10 KB is answered 400 wherever it stands in the path', async () => {
    const long = 'n'.repeat(10_000);
    for (const path of [`secret/${long}`, `secret/${'n'.repeat(3_000)}`, `sys/namespaces/${long}`, `auth/token/roles/${long}`, `transit/keys/${long}`]) {
      const res = await api(url, 'PUT', `/v1/${path}`, { token: rootToken, body: { a: 'b' } });
      expect([path.slice(0, 20), res.status]).toEqual([path.slice(0, 20), 400]);
      expect(res.body.errors[0]).toMatch(/longer than 2048 bytes/);
    }
    const viaHeader = await api(url, 'GET', '/v1/secret/x', { token: rootToken, headers: { 'X-Service-Namespace': long } });
    expect(viaHeader.status).toBe(400);
  });

  test('a wrap TTL above the maximum lease TTL is cut to it', async () => {
    const wrapped = await api<{ wrap_info: { ttl: number; token: string } }>(url, 'POST', '/v1/sys/wrapping/wrap', {
      token: rootToken,
      body: { a: 'b' },
      headers: { 'X-Service-Wrap-TTL': '87600h' },
    });
    expect(wrapped.status).toBe(200);
    expect(wrapped.body.wrap_info.ttl).toBe(768 * 3600);
    const lookup = await api<{ data: { creation_ttl: number } }>(url, 'POST', '/v1/sys/wrapping/lookup', { token: rootToken, body: { token: wrapped.body.wrap_info.token } });
    expect(lookup.body.data.creation_ttl).toBe(768 * 3600);
  });

  test('a NUL in a lease id or a token accessor is answered 400 naming the field', async () => {
    const cases: [string, Record<string, string>, string][] = [
      ['/v1/sys/leases/lookup', { lease_id: 'a\u0000b' }, 'lease_id'],
      ['/v1/sys/leases/revoke', { lease_id: 'a\u0000b' }, 'lease_id'],
      ['/v1/auth/token/lookup-accessor', { accessor: 'a\u0000b' }, 'accessor'],
      ['/v1/auth/token/revoke-accessor', { accessor: 'a\u0000b' }, 'accessor'],
    ];
    for (const [path, body, field] of cases) {
      const res = await api(url, 'PUT', path, { token: rootToken, body });
      expect([path, res.status]).toEqual([path, 400]);
      expect(res.body.errors.join(' ')).toMatch(new RegExp(`"${field}".*NUL`));
    }
  });

  test('a 31 MiB write does not hold up other requests: health answers before the write completes', async () => {
    const value = 'x'.repeat(1024 * 1024 - 16);
    const data = Object.fromEntries(Array.from({ length: 31 }, (_, i) => [`part${i}`, value]));
    const body = Buffer.from(JSON.stringify(data));
    // A connection opened beforehand, as a monitoring client keeps one.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect((await send(url, 'GET', '/v1/sys/health', { agent })).status).toBe(200);
      const order: string[] = [];
      let health: Promise<void> | undefined;
      const write = send(url, 'PUT', '/v1/secret/large', {
        token: rootToken,
        body,
        // Once the whole body is on its way, the server's work on it is what health competes with.
        onSent: () => {
          health = send(url, 'GET', '/v1/sys/health', { agent }).then((answer) => {
            expect(answer.status).toBe(200);
            order.push('health');
          });
        },
      }).then((answer) => {
        expect(answer.status).toBe(204);
        order.push('write');
      });
      await write;
      await health;
      expect(order).toEqual(['health', 'write']);
      const read = await api<{ data: Record<string, string> }>(url, 'GET', '/v1/secret/large', { token: rootToken });
      expect(read.body.data.part30).toBe(value);
    } finally {
      agent.destroy();
    }
  }, 120_000);
});
