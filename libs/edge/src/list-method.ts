import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import type { JsonBody } from '@svc/api-contract';
import type { HeaderList } from './headers';
import { jsonError, type HttpResult } from './exchange';

/**
 * Node's HTTP parser (llhttp) knows a fixed set of methods and rejects `LIST`, which the API uses.
 * Connections are parsed natively, the fast path for every other request (reading them through
 * JavaScript to rewrite `LIST` on the way cost a fifth of a simple request, and needed a framer of
 * our own to find where each request starts). The parser itself finds that: it stops at the "S" of
 * a `LIST` and reports where (`clientError`, with the chunk and the offset), after every request
 * before it has been read whole. It never parses that connection again, so the connection goes on
 * as a *continuation*: a stream handed to the same HTTP server as a new connection, fed the
 * client's bytes from that "S" on behind "PO", so that the parser reads a `POST`, framed (body
 * included) as any request is. Its first request is served as the LIST it was; the next `LIST`
 * stops its parser the same way and opens the next continuation. Every request is read by llhttp,
 * once, and the connection stays open. A continuation's answers reach the client's socket only
 * after every answer owed before it has been written there.
 */

/** A connection as the HTTP server sees it: a client's socket, or a continuation of one. */
export type Connection = Socket | Continuation;

export interface ListHandlers {
  /** Hands a continuation to the HTTP server as a new connection. */
  accept(continuation: Duplex): void;
  /** Every header of an answer (the listener's, content type and length). */
  headersFor(result: HttpResult, body: JsonBody | undefined): HeaderList;
}

type ParseError = NodeJS.ErrnoException & { rawPacket?: Buffer; bytesParsed?: number };

/** The last answer begun on each connection: the server writes a connection's answers in order, so once it is written, all are. */
const lastResponses = new WeakMap<Connection, ServerResponse>();

/** Connections whose parser stopped at a LIST, with the relay that carries the client's bytes on. */
const stopped = new WeakMap<Connection, Relay>();

/** Connections refused for a parse error: their one answer is on its way and later bytes are dropped. */
const refused = new WeakSet<Connection>();

/** Notes the answer to each request the server emits, so that what is written after it waits for it. */
export function responseBegun(req: IncomingMessage, res: ServerResponse): void {
  lastResponses.set(req.socket as Connection, res);
}

/** The request's method: the first request of a continuation is the LIST that opened it. */
export function requestMethod(req: IncomingMessage): string {
  const socket = req.socket;
  return socket instanceof Continuation && socket.takeList() ? 'LIST' : (req.method ?? 'GET');
}

/**
 * Handles a parse error of the HTTP server: a LIST continues the connection on a continuation;
 * any other (a malformed request line, an oversized head, a head not received in time) is answered
 * 400, 431 or 408 after the answers owed before it, and the connection closes.
 */
export function onParseError(err: ParseError, connection: Connection, handlers: ListHandlers): void {
  const relay = stopped.get(connection);
  if (relay) {
    // The stopped parser of a client's socket reports each later chunk as one more error.
    if (connection === relay.socket && err.code?.startsWith('HPE_') && Buffer.isBuffer(err.rawPacket)) relay.tail.feed(err.rawPacket);
    return;
  }
  if (refused.has(connection)) return;
  const start = listStart(err);
  if (start !== undefined) {
    continueAfter(connection, err.rawPacket!.subarray(start), handlers);
    return;
  }
  refuseConnection(connection, refusal(err), handlers.headersFor);
}

/** Answers `result` after the answers owed before it on the connection, then closes the connection. */
export function refuseConnection(connection: Connection, result: HttpResult, headersFor: ListHandlers['headersFor']): void {
  refused.add(connection);
  answersWritten(connection)
    .then(() => writeAndClose(connection, result, headersFor))
    .catch(() => connection.destroy());
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

const S = 'S'.charCodeAt(0);
const LI = Buffer.from('LI');
/** Read before the "ST" of a LIST, it makes the parser read a POST. */
const PO = Buffer.from('PO');

/** Where the "S" of a LIST's method is in the chunk the parser refused, or undefined when it refused something else. */
function listStart(err: ParseError): number | undefined {
  const chunk = err.rawPacket;
  const at = err.bytesParsed;
  if (err.code !== 'HPE_INVALID_METHOD' || !Buffer.isBuffer(chunk) || at === undefined || chunk[at] !== S) return undefined;
  // "L" or "LI" may have ended an earlier chunk, which is gone: what this one holds must match.
  // (So a method split there, such as "GE" then "ST", reads as LIST: the parser keeps no trace of
  // the letters it took, and its error is the same.)
  const before = chunk.subarray(Math.max(0, at - LI.length), at);
  return before.equals(LI.subarray(LI.length - before.length)) ? at : undefined;
}

/** Resolves once every answer begun on the connection has been written to the client's socket. */
function answersWritten(connection: Connection): Promise<void> {
  const opened = connection instanceof Continuation ? connection.opened : Promise.resolve();
  return opened.then(() => {
    const last = lastResponses.get(connection);
    if (!last || last.destroyed) return undefined;
    return new Promise<void>((resolve) => last.once('close', () => resolve()));
  });
}

/** The connection's parser stopped at a LIST starting at `rest`: the next continuation reads from there. */
function continueAfter(connection: Connection, rest: Buffer, handlers: ListHandlers): void {
  const relay = connection instanceof Continuation ? connection.relay : new Relay(connection, handlers.accept);
  const unread = connection instanceof Continuation ? connection.stop() : [];
  stopped.set(connection, relay);
  const next = new Continuation(relay, [PO, rest, ...unread]);
  answersWritten(connection)
    .then(() => {
      // The last answer before the LIST closed the connection (the client asked so): nothing after it is answered.
      if (connection.writableEnded || connection.destroyed) return next.release();
      // The socket's own answers set its keep-alive timeout as they finished: the last continuation's applies.
      if (connection === relay.socket) relay.socket.setTimeout(relay.tail.timeoutMs);
      next.open();
      if (connection instanceof Continuation) connection.release();
    })
    .catch(() => relay.socket.destroy());
  relay.admit(next);
}

/** Above this many bytes waiting for a continuation's parser, the client's socket stops being read. */
const MAX_WAITING_INPUT = 64 * 1024;

/**
 * At most this many continuations of a connection wait for the answers before theirs with their
 * requests read (and being served); a later one is read only once one of them may answer. Node
 * stops reading a connection whose answers pile up; without this bound, a client pipelining LISTs
 * would have every one of them served at once, each on a continuation with no answers of its own yet.
 */
const MAX_CONTINUATIONS_AHEAD = 8;

/** A client's socket whose parser stopped at a LIST, and the continuations that read its bytes since. */
class Relay {
  /** The continuation reading the client's bytes. */
  tail!: Continuation;
  inputEnded = false;
  /** Continuations not yet closed; the client's socket closing closes them. */
  readonly live = new Set<Continuation>();
  /** Continuations handed to the server (reading) that may not answer yet. */
  private readonly ahead = new Set<Continuation>();
  /** Continuations waiting to be handed to the server, in order. */
  private readonly waitingToRead: Continuation[] = [];
  private paused = false;

  constructor(
    readonly socket: Socket,
    private readonly accept: ListHandlers['accept'],
  ) {
    socket.once('end', () => {
      this.inputEnded = true;
      this.tail.deliver();
    });
    socket.once('close', () => {
      for (const continuation of this.live) continuation.destroy();
    });
  }

  /** Hands the continuation to the server, or holds it while MAX_CONTINUATIONS_AHEAD are reading ahead of their answers. */
  admit(continuation: Continuation): void {
    if (this.socket.destroyed) return; // closing: every continuation is being closed
    if (this.ahead.size >= MAX_CONTINUATIONS_AHEAD) {
      this.waitingToRead.push(continuation);
      return;
    }
    if (!continuation.answering) this.ahead.add(continuation);
    this.accept(continuation);
  }

  /** The continuation may answer now, or is closed: the next one waiting is read. */
  settled(continuation: Continuation): void {
    if (continuation.destroyed) {
      const waiting = this.waitingToRead.indexOf(continuation);
      if (waiting >= 0) this.waitingToRead.splice(waiting, 1);
    }
    if (!this.ahead.delete(continuation)) return;
    const next = this.waitingToRead.shift();
    if (next) this.admit(next);
  }

  /** Reads the client's socket only while the continuation reading it keeps up. */
  waiting(bytes: number): void {
    const pause = bytes > MAX_WAITING_INPUT;
    if (pause === this.paused) return;
    this.paused = pause;
    if (pause) this.socket.pause();
    else this.socket.resume();
  }
}

/**
 * The rest of a client's connection from a LIST on, as the HTTP server reads it: its readable side
 * is the client's bytes (the LIST's first two rewritten), its writable side writes to the client's
 * socket once every answer owed before it has been written there.
 */
class Continuation extends Duplex {
  /** Settles when the continuation's answers may be written to the client's socket. */
  readonly opened: Promise<void>;
  /** The idle timeout the server asked for (keep-alive), applied to the client's socket while this is the last continuation. */
  timeoutMs = 0;
  private listPending = true;
  private input: Buffer[];
  private waitingBytes: number;
  private wanted = false;
  private stopped = false;
  /** Writes made before the continuation may write, in order; undefined once it may. */
  private held: (() => void)[] | undefined = [];
  private released = false;
  private markOpened!: () => void;

  constructor(
    readonly relay: Relay,
    input: Buffer[],
  ) {
    super({ allowHalfOpen: true });
    this.input = input;
    this.waitingBytes = input.reduce((sum, chunk) => sum + chunk.length, 0);
    this.opened = new Promise((resolve) => (this.markOpened = resolve));
    relay.tail = this;
    relay.live.add(this);
    relay.socket.setTimeout(0); // the socket's keep-alive timeout would end a LIST served slowly
    relay.waiting(this.waitingBytes);
  }

  get remoteAddress(): string | undefined {
    return this.relay.socket.remoteAddress;
  }

  /** True once, for the first request: the LIST this continuation was opened for. */
  takeList(): boolean {
    const list = this.listPending;
    this.listPending = false;
    return list;
  }

  /** Node's server sets the connection's keep-alive timeout here; it applies to the client's socket while this continuation reads it. */
  setTimeout(ms: number): this {
    this.timeoutMs = ms;
    if (this.relay.tail === this) this.relay.socket.setTimeout(ms);
    return this;
  }

  feed(chunk: Buffer): void {
    this.input.push(chunk);
    this.waitingBytes += chunk.length;
    this.relay.waiting(this.waitingBytes);
    this.deliver();
  }

  /** Hands the parser the next chunk it asked for (one at a time, so what it has not read stays in `input`). */
  deliver(): void {
    if (!this.wanted || this.stopped) return;
    const chunk = this.input.shift();
    if (chunk) {
      this.wanted = false;
      this.waitingBytes -= chunk.length;
      this.relay.waiting(this.waitingBytes);
      this.push(chunk);
    } else if (this.relay.inputEnded) {
      this.wanted = false;
      this.push(null);
    }
  }

  override _read(): void {
    this.wanted = true;
    this.deliver();
  }

  /** The parser stopped at a LIST: returns what it has not read, for the next continuation. */
  stop(): Buffer[] {
    this.stopped = true;
    // The parser is done with this stream: what the stream still buffers is taken back, not fed to it.
    this.removeAllListeners('data');
    this.pause();
    const unread: Buffer[] = [];
    for (let chunk: Buffer | null; (chunk = this.read() as Buffer | null) !== null; ) unread.push(chunk);
    unread.push(...this.input);
    this.input = [];
    return unread;
  }

  /** Its answers may now be written: every answer before them has been. */
  open(): void {
    const held = this.held ?? [];
    this.held = undefined;
    this.markOpened();
    this.relay.settled(this);
    for (const write of held) write();
  }

  /** True once its answers may be written. */
  get answering(): boolean {
    return this.held === undefined;
  }

  /** Closes the continuation without closing the client's socket (its answers are written, or will never be). */
  release(): void {
    this.released = true;
    this.destroy();
  }

  private whenOpen(write: () => void): void {
    if (this.held) this.held.push(write);
    else write();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.whenOpen(() => {
      if (!this.relay.socket.writable) return callback(new Error('the client connection is closed'));
      this.relay.socket.write(chunk, callback);
    });
  }

  override _writev(chunks: { chunk: Buffer }[], callback: (error?: Error | null) => void): void {
    this.whenOpen(() => {
      const socket = this.relay.socket;
      if (!socket.writable) return callback(new Error('the client connection is closed'));
      socket.cork();
      chunks.forEach(({ chunk }, i) => socket.write(chunk, i === chunks.length - 1 ? callback : undefined));
      socket.uncork();
    });
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.whenOpen(() => {
      this.relay.socket.end();
      callback();
    });
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.relay.live.delete(this);
    this.held = undefined;
    this.relay.settled(this);
    // The server destroys a connection it gives up on (a timeout, a failed answer): that is the client's socket.
    if (!this.released) this.relay.socket.destroy();
    callback(error);
  }
}

/** Writes the answer straight to the connection (its parser gave up on it, or it tunnels nothing) and closes it. */
function writeAndClose(connection: Connection, result: HttpResult, headersFor: ListHandlers['headersFor']): void {
  if (!connection.writable) {
    connection.destroy();
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
  connection.write(lines.join('\r\n'));
  connection.end(body ?? '');
}
