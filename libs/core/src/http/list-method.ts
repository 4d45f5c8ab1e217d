import { STATUS_CODES, type IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { JsonBody } from '@svc/http';
import type { HeaderList } from './headers';
import { jsonError, type HttpResult } from './pipeline';

/**
 * Node's HTTP parser (llhttp) knows a fixed set of methods and rejects `LIST`, which the API uses.
 * Connections are parsed natively, the fast path for every other request (reading them through
 * JavaScript to rewrite `LIST` on the way cost a fifth of a simple request). A request the parser
 * rejects because it is a `LIST` is read here instead: the parser hands over the bytes it refused
 * (and, as it stays in its error state, each later chunk) through `clientError`, the head is parsed
 * here, the request is served like any other, and the connection closes after the answer, since
 * the native parser cannot resume. Clients open a new connection for their next request.
 */

/** A LIST request as read from the wire. */
export interface ListRequest {
  url: string;
  headers: IncomingHttpHeaders;
}

export interface ListHandlers {
  serve(req: ListRequest): Promise<HttpResult>;
  /** Every header of an answer (the listener's, content type and length). */
  headersFor(result: HttpResult, body: JsonBody | undefined): HeaderList;
}

const MAX_HEAD = 64 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n');
const LIST = Buffer.from('LIST ');

interface Gathering {
  parts: Buffer[];
  size: number;
  /** The head was read (and is being answered): later bytes are ignored. */
  complete: boolean;
}

/** Per-socket state: the head of a LIST being gathered, and answers still owed before it. */
const gathering = new WeakMap<Socket, Gathering>();
const pending = new WeakMap<Socket, { count: number; idle?: () => void }>();

/** Counts a request the HTTP server is serving on `socket`, so a LIST after it answers in order. */
export function requestStarted(socket: Socket): void {
  const entry = pending.get(socket);
  if (entry) entry.count++;
  else pending.set(socket, { count: 1 });
}

/** Called once the answer to a counted request has been written to its socket. */
export function requestAnswered(socket: Socket): void {
  const entry = pending.get(socket);
  if (!entry) return;
  entry.count--;
  if (entry.count === 0) entry.idle?.();
}

function answered(socket: Socket): Promise<void> {
  const entry = pending.get(socket);
  if (!entry || entry.count === 0) return Promise.resolve();
  return new Promise((resolve) => (entry.idle = resolve));
}

type ParseError = NodeJS.ErrnoException & { rawPacket?: Buffer; bytesParsed?: number };

/**
 * Handles a parse error of the HTTP server: a LIST request is gathered and served; any other
 * (a malformed request line, an oversized head) is answered 400 or 431. Either way the answer
 * follows the ones owed before it on the connection and closes it; later bytes are ignored.
 */
export function onParseError(err: ParseError, socket: Socket, handlers: ListHandlers): void {
  let state = gathering.get(socket);
  if (state?.complete) return; // pipelined after the answered request: never answered, the connection closes
  const raw = Buffer.isBuffer(err.rawPacket) ? err.rawPacket : Buffer.alloc(0);
  if (state) {
    add(state, raw);
  } else {
    const head = listHead(err, raw);
    state = { parts: [], size: 0, complete: false };
    gathering.set(socket, state);
    if (!head) return answerInOrder(socket, state, handlers, () => refusal(err));
    add(state, head);
  }
  const head = Buffer.concat(state.parts, state.size);
  const end = head.indexOf(HEAD_END);
  if (end < 0 && head.length <= MAX_HEAD) return;
  // Whatever follows the head (a pipelined request) is left unanswered: the connection closes
  // after this answer, which tells the client to send it again.
  const request = end < 0 ? undefined : parseHead(head.subarray(0, end).toString('latin1'));
  answerInOrder(socket, state, handlers, () => {
    if (end < 0) return jsonError(431, ['request headers too large']);
    if (!request) return jsonError(400, ['malformed HTTP request']);
    if (hasBody(request.headers)) return jsonError(400, ['a LIST request takes no body']);
    return handlers.serve(request);
  });
}

/** The answer to a request the parser refused, or that did not arrive in time. */
function refusal(err: ParseError): HttpResult {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return jsonError(431, ['request headers too large']);
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return jsonError(408, ['request timeout: the request head was not received in time']);
    default:
      return jsonError(400, ['malformed HTTP request']);
  }
}

/** The start of a LIST request in what the parser refused, or undefined when it refused something else. */
function listHead(err: ParseError, raw: Buffer): Buffer | undefined {
  if (err.code !== 'HPE_INVALID_METHOD' || err.bytesParsed === undefined) return undefined;
  // llhttp stops at the "S" of "LIST"; "L" or "LI" may have come at the end of an earlier chunk.
  const start = err.bytesParsed - 2;
  const carried = Math.max(0, -start);
  const head = Buffer.concat([LIST.subarray(0, carried), raw.subarray(Math.max(0, start))]);
  // A head cut short after "LIS" is taken too: if it is no LIST, its request line fails to parse.
  const seen = Math.min(head.length, LIST.length);
  return carried <= 2 && head.subarray(0, seen).equals(LIST.subarray(0, seen)) ? head : undefined;
}

/** The one answer of a connection the parser gave up on: after the answers owed before it, then close. */
function answerInOrder(socket: Socket, state: Gathering, handlers: ListHandlers, result: () => HttpResult | Promise<HttpResult>): void {
  state.complete = true;
  state.parts = [];
  answered(socket)
    .then(result)
    .then(
      (answer) => writeAndClose(socket, answer, handlers.headersFor),
      () => socket.destroy(),
    );
}

function add(state: Gathering, chunk: Buffer): void {
  // The parser may reuse a chunk's memory once it returns: keep a copy.
  state.parts.push(Buffer.from(chunk));
  state.size += chunk.length;
}

/** What Node's parser accepts: a visible-ASCII target, token header names, no control characters in values. */
const REQUEST_LINE = /^LIST ([\x21-\x7e]+) HTTP\/1\.[01]$/;
const HEADER_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*([^\x00-\x08\x0a-\x1f\x7f]*?)[ \t]*$/;

function parseHead(text: string): ListRequest | undefined {
  const lines = text.split('\r\n');
  const requestLine = REQUEST_LINE.exec(lines[0]);
  if (!requestLine) return undefined;
  const headers: IncomingHttpHeaders = {};
  for (const line of lines.slice(1)) {
    const header = HEADER_LINE.exec(line);
    if (!header) return undefined;
    const name = header[1].toLowerCase();
    const existing = headers[name];
    headers[name] = existing === undefined ? header[2] : `${existing}, ${header[2]}`;
  }
  return { url: requestLine[1], headers };
}

function hasBody(headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
}

/** Writes the answer straight to the socket (the HTTP server gave up on it) and closes it. */
export function writeAndClose(socket: Socket, result: HttpResult, headersFor: ListHandlers['headersFor']): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = result.status === 204 ? undefined : result.body;
  const headers = headersFor(result, body);
  const lines = [`HTTP/1.1 ${result.status} ${STATUS_CODES[result.status] ?? 'Unknown'}`];
  for (let i = 0; i < headers.length; i += 2) {
    const values = headers[i + 1];
    for (const value of Array.isArray(values) ? values : [values]) lines.push(`${headers[i] as string}: ${value}`);
  }
  lines.push('connection: close', '', '');
  socket.write(lines.join('\r\n'));
  socket.end(body ?? '');
}
