import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { onParseError, requestAnswered, requestStarted, type ListHandlers } from './list-method';

/**
 * A real node:http server wired as the gateway's front wires it: ordinary requests answer after
 * `delayMs`, LIST requests echo what was read.
 */
function startServer(delayMs = 0): Promise<{ port: number; close(): void }> {
  const server = http.createServer((req, res) => {
    requestStarted(req.socket);
    setTimeout(() => {
      res.end(`${req.method} ${req.url}`);
      requestAnswered(req.socket);
    }, delayMs);
  });
  const handlers: ListHandlers = {
    serve: async (req) => {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      return { status: 200, body: JSON.stringify(req) };
    },
    headersFor: (_result, body) => (body === undefined ? [] : ['content-length', String(Buffer.byteLength(body))]),
  };
  server.on('clientError', (err: NodeJS.ErrnoException, socket: net.Socket) => onParseError(err, socket, handlers));
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ port: (server.address() as AddressInfo).port, close: () => server.close() })));
}

/** Writes `parts` with a pause between them and collects everything until the server closes. */
async function exchange(port: number, parts: string[], pauseMs = 30): Promise<string> {
  const socket = net.connect(port, '127.0.0.1');
  const received: Buffer[] = [];
  socket.on('data', (chunk) => received.push(chunk));
  // Bytes written after the server closed are refused; what was received is what the tests check.
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  for (const part of parts) {
    socket.write(part);
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  await closed;
  return Buffer.concat(received).toString('latin1');
}

function listed(answer: string): { url: string; headers: Record<string, string> } {
  return JSON.parse(answer.slice(answer.lastIndexOf('\r\n\r\n') + 4));
}

describe('LIST requests', () => {
  let server: { port: number; close(): void };
  beforeAll(async () => {
    server = await startServer(50);
  });
  afterAll(() => server.close());

  it('are served from what the parser refused, then the connection closes', async () => {
    const answer = await exchange(server.port, ['LIST /v1/secret/?x=1 HTTP/1.1\r\nHost: a\r\nX-Service-Token: t\r\n\r\n']);
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(answer).toContain('connection: close');
    expect(listed(answer)).toEqual({ url: '/v1/secret/?x=1', headers: { host: 'a', 'x-service-token': 't' } });
  });

  it('follow earlier requests of a keep-alive connection, and answer after them', async () => {
    // Sent in one write: the GET's answer is still owed when the LIST is read.
    const answer = await exchange(server.port, ['GET /first HTTP/1.1\r\nHost: a\r\n\r\nLIST /v1/dir/ HTTP/1.1\r\nHost: a\r\n\r\n']);
    expect(answer.indexOf('GET /first')).toBeGreaterThan(0);
    expect(answer.indexOf('GET /first')).toBeLessThan(answer.indexOf('"url":"/v1/dir/"'));
  });

  it('are read when their head arrives in pieces', async () => {
    const answer = await exchange(server.port, ['GET /a HTTP/1.1\r\nHost: a\r\n\r\nLI', 'S', 'T /v1/split/ HTTP/1.1\r\nHo', 'st: b\r\n', '\r\n']);
    expect(answer).toContain('GET /a');
    expect(listed(answer)).toEqual({ url: '/v1/split/', headers: { host: 'b' } });
  });

  it('answer once when more requests follow on the connection, which then closes', async () => {
    const answer = await exchange(server.port, ['LIST /v1/a/ HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\n', 'Host: a\r\n\r\n', 'LIST /v1/c/ HTTP/1.1\r\n\r\n']);
    expect(answer.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    expect(listed(answer).url).toBe('/v1/a/');
  });

  it.each([
    ['a control character in a header value', 'LIST /v1/x HTTP/1.1\r\nX-A: a\x01b\r\n\r\n'],
    ['a space in a header name', 'LIST /v1/x HTTP/1.1\r\nX A: b\r\n\r\n'],
    ['a control character in the target', 'LIST /v1/\x7fx HTTP/1.1\r\n\r\n'],
    ['an unknown HTTP version', 'LIST /v1/x HTTP/2.0\r\n\r\n'],
  ])('with %s are refused with 400, as the parser refuses other requests', async (_what, request) => {
    const answer = await exchange(server.port, [request]);
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('malformed HTTP request');
  });

  it('with a body are refused with 400', async () => {
    const answer = await exchange(server.port, ['LIST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}']);
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('a LIST request takes no body');
  });

  it('are told from other unknown methods and malformed requests, which get a 400', async () => {
    for (const request of ['LISX /v1/x HTTP/1.1\r\nHost: a\r\n\r\n', 'LIS /v1/x HTTP/1.1\r\nHost: a\r\n\r\n', 'GET /v1/x HTTP/9\r\n\r\n']) {
      const answer = await exchange(server.port, [request]);
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toContain('malformed HTTP request');
    }
  });

  it('answer a malformed request once, after the answers owed before it', async () => {
    const answer = await exchange(server.port, ['GET /first HTTP/1.1\r\nHost: a\r\n\r\nBOGUS\r\n\r\n', 'more bytes\r\n\r\n']);
    expect(answer.match(/HTTP\/1\.1 /g)).toHaveLength(2);
    expect(answer.indexOf('GET /first')).toBeLessThan(answer.indexOf('400 Bad Request'));
  });

  it('with an oversized head are refused with 431', async () => {
    const answer = await exchange(server.port, ['LIST /v1/x HTTP/1.1\r\n', `X-Big: ${'a'.repeat(70 * 1024)}\r\n`]);
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
  });
});
