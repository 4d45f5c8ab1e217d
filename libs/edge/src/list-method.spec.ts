import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { RawHttpClient, type RawAnswer } from '@svc/testing';
import { onParseError, requestMethod, responseBegun, type Connection, type ListHandlers } from './list-method';

interface TestServer {
  url: string;
  /** The most requests being served at once so far. */
  mostAtOnce: number;
  close(): Promise<void>;
}

/**
 * A real node:http server wired as the gateway's front wires it. Every request is answered with
 * what was read (method, URL, body); a request to `/slow/<ms>` is answered after that many ms.
 */
function startServer(options: http.ServerOptions = {}): Promise<TestServer> {
  let serving = 0;
  const server = http.createServer({ requireHostHeader: false, ...options }, (req, res) => {
    responseBegun(req, res);
    const method = requestMethod(req);
    testServer.mostAtOnce = Math.max(testServer.mostAtOnce, ++serving);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const delay = Number(/^\/slow\/(\d+)/.exec(req.url ?? '')?.[1] ?? 0);
      setTimeout(() => {
        serving--;
        res.end(JSON.stringify({ method, url: req.url, body: Buffer.concat(chunks).toString() }));
      }, delay);
    });
  });
  const testServer: TestServer = {
    url: '',
    mostAtOnce: 0,
    close: () =>
      new Promise((closed) => {
        server.close(() => closed());
        server.closeAllConnections();
      }),
  };
  const handlers: ListHandlers = {
    accept: (continuation) => server.emit('connection', continuation),
    headersFor: (_result, body) => (body === undefined ? [] : ['content-length', String(Buffer.byteLength(body))]),
  };
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Connection) => onParseError(err, socket, handlers));
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      testServer.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      resolve(testServer);
    }),
  );
}

function served(answer: RawAnswer | undefined): { method: string; url: string; body: string } | undefined {
  return answer && JSON.parse(answer.body);
}

describe('LIST requests', () => {
  let server: TestServer;
  let client: RawHttpClient;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());
  beforeEach(() => {
    client = RawHttpClient.connect(server.url);
  });
  afterEach(() => client.end());

  it('are served, and the connection stays open for the next request', async () => {
    await client.send('LIST /v1/secret/?x=1 HTTP/1.1\r\nHost: a\r\nX-Service-Token: t\r\n\r\n');
    const list = await client.answer();
    expect(list?.status).toBe(200);
    expect(list?.headers.connection).not.toBe('close');
    expect(served(list)).toEqual({ method: 'LIST', url: '/v1/secret/?x=1', body: '' });
    await client.send('GET /v1/after HTTP/1.1\r\nHost: a\r\n\r\n');
    expect(served(await client.answer())).toMatchObject({ method: 'GET', url: '/v1/after' });
  });

  it('after a request answered on a keep-alive connection are answered', async () => {
    for (let i = 0; i < 3; i++) {
      await client.send(`GET /v1/get${i} HTTP/1.1\r\nHost: a\r\n\r\n`);
      expect(served(await client.answer())).toMatchObject({ method: 'GET', url: `/v1/get${i}` });
      await client.send(`LIST /v1/list${i}/ HTTP/1.1\r\nHost: a\r\n\r\n`);
      expect(served(await client.answer())).toMatchObject({ method: 'LIST', url: `/v1/list${i}/` });
    }
  });

  it('pipelined behind requests still being answered are answered after them, in order', async () => {
    // The first answer is still owed when the second is ready: Node queues the second behind it.
    await client.send('GET /slow/100 HTTP/1.1\r\nHost: a\r\n\r\nGET /v1/fast HTTP/1.1\r\nHost: a\r\n\r\nLIST /v1/dir/ HTTP/1.1\r\nHost: a\r\n\r\n');
    const answers = (await client.answers(3)).map(served);
    expect(answers).toEqual([
      { method: 'GET', url: '/slow/100', body: '' },
      { method: 'GET', url: '/v1/fast', body: '' },
      { method: 'LIST', url: '/v1/dir/', body: '' },
    ]);
  });

  it('pipelined with requests around them, LISTs included, are all answered in order', async () => {
    const requests = ['LIST /v1/a/', 'LIST /slow/50/', 'GET /v1/b', 'LIST /v1/c/', 'PUT /v1/d', 'LIST /v1/e/'];
    await client.send(requests.map((line) => `${line} HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}`).join(''));
    const answers = (await client.answers(requests.length)).map((answer) => {
      const { method, url } = served(answer)!;
      return `${method} ${url}`;
    });
    expect(answers).toEqual(requests);
  });

  it('in a long pipeline written in uneven pieces, behind a slow answer, are all answered in order', async () => {
    // Answers held behind the slow one make the server stop reading the connection meanwhile.
    const requests = Array.from({ length: 300 }, (_, i) => (i === 0 ? 'GET /slow/200' : `${i % 40 === 1 ? 'LIST' : 'GET'} /v1/${i}/${'p'.repeat(500)}`));
    const wire = requests.map((line, i) => `${line} HTTP/1.1\r\nHost: a\r\nContent-Length: ${String(i).length}\r\n\r\n${i}`).join('');
    const pieces: string[] = [];
    for (let at = 0, size = 1; at < wire.length; at += size, size = (size * 7) % 5003) pieces.push(wire.slice(at, at + size));
    const sent = client.send(...pieces);
    const answers = (await client.answers(requests.length)).map((answer) => {
      const { method, url, body } = served(answer)!;
      return `${method} ${url} ${body}`;
    });
    await sent;
    expect(answers).toEqual(requests.map((line, i) => `${line} ${i}`));
  });

  it('pipelined by the hundred are served a few at a time, as other requests are, and all answered in order', async () => {
    const own = await startServer();
    const pipelining = RawHttpClient.connect(own.url);
    const urls = Array.from({ length: 100 }, (_, i) => `/slow/20/${i}/`);
    await pipelining.send(urls.map((url) => `LIST ${url} HTTP/1.1\r\nHost: a\r\n\r\n`).join(''));
    const answers = await pipelining.answers(urls.length);
    pipelining.end();
    await own.close();
    expect(answers.map((answer) => served(answer)?.url)).toEqual(urls);
    // Served at once, a hundred LISTs would each hold a request's resources until its turn to answer.
    expect(own.mostAtOnce).toBeGreaterThan(1);
    expect(own.mostAtOnce).toBeLessThanOrEqual(10);
  });

  it('after a request with a body in the same write are answered, and the body read whole', async () => {
    await client.send('POST /v1/write HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\n\r\n{"a":1}LIST /v1/dir/ HTTP/1.1\r\nHost: a\r\n\r\n');
    expect((await client.answers(2)).map(served)).toEqual([
      { method: 'POST', url: '/v1/write', body: '{"a":1}' },
      { method: 'LIST', url: '/v1/dir/', body: '' },
    ]);
  });

  it('with a body are read whole, framed by its length or its chunks', async () => {
    await client.send('LIST /v1/a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 9\r\n\r\n{"b":"c"}');
    await client.send('LIST /v1/b/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nLIST\r\n0\r\n\r\nGET /v1/c HTTP/1.1\r\nHost: a\r\n\r\n');
    expect((await client.answers(3)).map(served)).toEqual([
      { method: 'LIST', url: '/v1/a/', body: '{"b":"c"}' },
      { method: 'LIST', url: '/v1/b/', body: 'LIST' },
      { method: 'GET', url: '/v1/c', body: '' },
    ]);
  });

  it('are read when their head arrives byte by byte', async () => {
    const list = 'LIST /v1/split/ HTTP/1.1\r\nHost: b\r\n\r\n';
    await client.send('GET /v1/a HTTP/1.1\r\nHost: a\r\n\r\n', ...list, ...'GET /v1/then HTTP/1.1\r\nHost: a\r\n\r\n');
    expect((await client.answers(3)).map(served)).toEqual([
      { method: 'GET', url: '/v1/a', body: '' },
      { method: 'LIST', url: '/v1/split/', body: '' },
      { method: 'GET', url: '/v1/then', body: '' },
    ]);
  });

  it('are not answered after a request that closes the connection', async () => {
    await client.send('GET /slow/50 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nLIST /v1/dir/ HTTP/1.1\r\nHost: a\r\n\r\n');
    expect(served(await client.answer())).toMatchObject({ url: '/slow/50' });
    await client.closed;
    expect(await client.answer()).toBeUndefined();
  });

  it.each([
    ['a control character in a header value', 'LIST /v1/x HTTP/1.1\r\nX-A: a\x01b\r\n\r\n'],
    ['a space in a header name', 'LIST /v1/x HTTP/1.1\r\nX A: b\r\n\r\n'],
    ['a control character in the target', 'LIST /v1/\x7fx HTTP/1.1\r\n\r\n'],
    ['an unknown HTTP version', 'LIST /v1/x HTTP/7.0\r\n\r\n'],
  ])('with %s are refused with 400, as the parser refuses other requests', async (_what, request) => {
    await client.send(request);
    const answer = await client.answer();
    expect(answer?.status).toBe(400);
    expect(answer?.body).toContain('malformed HTTP request');
    await client.closed;
  });

  it('are told from other unknown methods and malformed requests, which get a 400', async () => {
    for (const request of ['LISX /v1/x HTTP/1.1\r\nHost: a\r\n\r\n', 'LIS /v1/x HTTP/1.1\r\nHost: a\r\n\r\n', 'LISTEN /v1/x HTTP/1.1\r\n\r\n', 'XIST /v1/x HTTP/1.1\r\n\r\n']) {
      const other = RawHttpClient.connect(server.url);
      await other.send(request);
      const answer = await other.answer();
      expect([request, answer?.status]).toEqual([request, 400]);
      expect(answer?.body).toContain('malformed HTTP request');
      other.end();
    }
  });

  it('do not hide a malformed request after them, refused after the answers owed before it', async () => {
    await client.send('GET /slow/50 HTTP/1.1\r\nHost: a\r\n\r\nLIST /v1/a/ HTTP/1.1\r\nHost: a\r\n\r\nBOGUS\r\n\r\n', 'more bytes\r\n\r\n');
    const answers = await client.answers(3);
    expect(answers.map((answer) => answer?.status)).toEqual([200, 200, 400]);
    expect(served(answers[1])).toMatchObject({ method: 'LIST', url: '/v1/a/' });
    await client.closed;
  });

  it('with an oversized head are refused with 431', async () => {
    await client.send('LIST /v1/x HTTP/1.1\r\n', `X-Big: ${'a'.repeat(70 * 1024)}\r\n`);
    expect((await client.answer())?.status).toBe(431);
  });
});

describe('LIST requests and the server timeouts', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ headersTimeout: 300, requestTimeout: 600, keepAliveTimeout: 200, connectionsCheckingInterval: 20 });
  });
  afterAll(() => server.close());

  it('whose head never ends are answered 408', async () => {
    const client = RawHttpClient.connect(server.url);
    await client.send('GET /v1/a HTTP/1.1\r\nHost: a\r\n\r\n');
    await client.answer();
    await client.send('LIST /v1/x HTTP/1.1\r\nHost: a\r\n');
    expect((await client.answer())?.status).toBe(408);
    await client.closed;
  });

  it('served for longer than the keep-alive timeout are answered, and the idle connection then closes', async () => {
    const client = RawHttpClient.connect(server.url);
    await client.send('GET /v1/a HTTP/1.1\r\nHost: a\r\n\r\n');
    await client.answer();
    // Each time idle for less than the keep-alive timeout (200 ms, and Node's 1 s margin), then a
    // LIST served for longer: the first LIST follows a request of the socket, the second one of a continuation.
    for (const url of ['/slow/1500/', '/slow/1501/']) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await client.send(`LIST ${url} HTTP/1.1\r\nHost: a\r\n\r\n`);
      expect(served(await client.answer())).toMatchObject({ method: 'LIST', url });
    }
    await client.closed;
  });
});
