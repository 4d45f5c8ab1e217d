import { STATUS_CODES } from 'node:http';
import { createServer, Server, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  /** Path and query as sent, e.g. /v1/secret/foo?list=true */
  url: string;
  /** Lower-cased names. */
  headers: Record<string, string>;
  body: string;
}

export interface StubReply {
  status: number;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as text/html instead of `body`. */
  raw?: string;
}

const HEAD_END = '\r\n\r\n';

/**
 * A stand-in for the service's API in client tests: records each request and answers with `reply`.
 * It reads HTTP/1.1 itself because Node's HTTP parser rejects the LIST method, which the clients
 * must send on the wire. One request per connection; bodies need Content-Length (fetch sends it).
 */
export class StubApi {
  readonly requests: RecordedRequest[] = [];
  reply: (request: RecordedRequest) => StubReply = () => ({ status: 204 });

  private constructor(private readonly server: Server) {}

  static async start(): Promise<StubApi> {
    const server = createServer();
    const stub = new StubApi(server);
    server.on('connection', (socket) => stub.serve(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return stub;
  }

  get address(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private serve(socket: Socket): void {
    let received = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const request = parseRequest(received);
      if (request) this.answer(socket, request);
    });
    socket.on('error', () => socket.destroy());
  }

  private answer(socket: Socket, request: RecordedRequest): void {
    this.requests.push(request);
    const { status, body, raw } = this.reply(request);
    const payload = raw ?? (body === undefined ? '' : JSON.stringify(body));
    const head = [
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}`,
      `Content-Type: ${raw === undefined ? 'application/json' : 'text/html'}`,
      `Content-Length: ${Buffer.byteLength(payload)}`,
      'Connection: close',
    ].join('\r\n');
    socket.end(head + HEAD_END + payload);
  }
}

/** The request once its head and whole body have arrived; undefined while incomplete. */
function parseRequest(received: Buffer): RecordedRequest | undefined {
  const headEnd = received.indexOf(HEAD_END);
  if (headEnd < 0) return undefined;
  const [requestLine, ...headerLines] = received.subarray(0, headEnd).toString('latin1').split('\r\n');
  const headers = Object.fromEntries(
    headerLines.map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
    }),
  );
  const body = received.subarray(headEnd + HEAD_END.length);
  if (body.length < Number(headers['content-length'] ?? 0)) return undefined;
  const [method, url] = requestLine.split(' ');
  return { method, url, headers, body: body.toString('utf8') };
}
