import * as http from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { ListenerConfig } from '@svc/config';
import type { JsonBody } from '@svc/api-contract';
import { bindListener, type BoundListener, type ListenerContext } from './listeners';
import type { HeaderList } from './headers';
import { onParseError, refuseConnection, requestMethod, responseBegun, type Connection } from './list-method';
import { isUploadRequest, jsonError, type HttpRequest, type HttpResult } from './exchange';
import type { HttpHandler } from './service-health';

/**
 * The gateway's HTTP front: one `node:http` server behind every listener, handing each request
 * to the pipeline. No web framework sits on this path: routing is the core's longest-prefix mount
 * match, and a framework's router, hooks and reply objects measured as a third of the gateway's
 * per-request cost (docs/benchmarks.md).
 */
export interface HttpFrontend {
  listeners: BoundListener[];
  close(): Promise<void>;
}

export async function startHttpFrontend(pipeline: HttpHandler, listeners: ListenerConfig[]): Promise<HttpFrontend> {
  const bound: BoundListener[] = [];
  for (const listener of listeners) {
    bound.push(
      await bindListener(listener, (server, context) => {
        const serve = (req: http.IncomingMessage, res: http.ServerResponse) => serveRequest(pipeline, context, req, res);
        server.on('request', serve);
        // Node would answer an unknown Expect itself, unseen here; refuseHead answers it.
        server.on('checkExpectation', serve);
        server.on('clientError', (err: NodeJS.ErrnoException, socket: Connection) => onClientError(context, server, err, socket));
        // Node hands a CONNECT over as a raw socket; this server tunnels nothing.
        server.on('connect', (_req: http.IncomingMessage, socket: Connection) =>
          refuseConnection(socket, jsonError(405, ['method CONNECT is not supported']), (result, body) => headersFor(context, result, body)),
        );
      }),
    );
  }
  return {
    listeners: bound,
    close: async () => {
      await Promise.all(bound.map((l) => l.close()));
    },
  };
}

type ListenerRules = Pick<HttpRequest, 'requireRequestHeader' | 'jsonLimits' | 'refusedUnauthed' | 'unauthenticatedMetrics'>;

/** Rules by listener configuration, made once per configuration rather than once per request. */
const rulesByConfig = new WeakMap<ListenerConfig, ListenerRules>();

/** What the pipeline applies per listener. */
function listenerRules(config: ListenerConfig): ListenerRules {
  let rules = rulesByConfig.get(config);
  if (!rules) {
    rules = {
      unauthenticatedMetrics: config.unauthenticatedMetricsAccess,
      requireRequestHeader: config.requireRequestHeader,
      jsonLimits: config.jsonLimits,
      refusedUnauthed: { rekey: config.disableUnauthedRekeyEndpoints, generateRoot: config.disableUnauthedGenerateRootEndpoints },
    };
    rulesByConfig.set(config, rules);
  }
  return rules;
}

/**
 * A request the parser refused or gave up on: a body that turned out malformed, or a request past
 * its timeout, ends the request being read; a LIST goes on as a continuation of the connection,
 * anything else is refused (list-method.ts).
 */
function onClientError(listener: ListenerContext, server: http.Server, err: NodeJS.ErrnoException, socket: Connection): void {
  const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
  if (bodyReaders.get(socket)?.(timedOut ? REQUEST_TIMEOUT : MALFORMED_BODY)) return;
  onParseError(err, socket, {
    // Node's server takes any duplex stream as a connection; behind TLS, as a decrypted one.
    accept: (continuation) => server.emit(listener.tls ? 'secureConnection' : 'connection', continuation),
    headersFor: (result, body) => headersFor(listener, result, body),
  });
}

function serveRequest(pipeline: HttpHandler, listener: ListenerContext, req: http.IncomingMessage, res: http.ServerResponse): void {
  responseBegun(req, res);
  // A request read after the connection was closed (a client that sent on after asking to close) cannot be answered.
  if (!req.socket.writable) return;
  const method = requestMethod(req);
  const { writeMs } = listener.config.timeouts;
  if (writeMs > 0) limitWriteTime(res, writeMs);
  const refusal = refuseHead(req);
  if (refusal) {
    req.resume();
    send(res, listener, refusal, false, true);
    return;
  }
  if (isUploadRequest(method, req.url)) {
    serveUpload(pipeline, listener, req, res);
    return;
  }
  const limit = listener.config.maxRequestSize;
  const failed = () => {
    res.destroy();
  };
  const answer = (result: HttpResult) => {
    try {
      send(res, listener, result, method === 'HEAD');
    } catch {
      failed();
    }
  };
  const serveBody = (body: ReadBody): Promise<void> | void => {
    if (body === TOO_LARGE) return afterUnreadBody(req, res, () => send(res, listener, jsonError(413, [`request body too large: the limit is ${limit} bytes`]), false));
    if (isEndedBody(body)) return send(res, listener, body, false, true);
    return pipeline
      .handle({
        method,
        url: req.url ?? '/',
        headers: req.headers,
        body,
        remoteAddress: req.socket.remoteAddress,
        ...listenerRules(listener.config),
      })
      .then(answer, failed);
  };
  const body = readBody(req, limit);
  // Most requests have no body, or one already read: they are served at once. The answer's own
  // step catches what fails in it, so nothing is chained on here.
  if (!(body instanceof Promise)) {
    try {
      void serveBody(body);
    } catch {
      failed();
    }
    return;
  }
  // The client went away mid-body: no answer reaches it either way.
  body.then(serveBody, () => undefined).catch(failed);
}

/**
 * A request whose body its handler reads as a stream (http/pipeline.ts, UPLOAD_PATHS), whatever
 * its size. What the handler left unread (a refusal comes before the body is read) is read and
 * dropped: closing the connection over unread bytes resets it, and the client would lose the answer.
 */
function serveUpload(pipeline: HttpHandler, listener: ListenerContext, req: http.IncomingMessage, res: http.ServerResponse): void {
  // A client cut off mid-upload (or one still sending when a refusal closes the connection) makes
  // the request emit 'error'; whoever reads the body sees it through its own listener, and an
  // unread body has none, which would end the process.
  req.on('error', () => undefined);
  pipeline
    .handle({
      method: req.method ?? 'POST',
      url: req.url ?? '/',
      headers: req.headers,
      body: undefined,
      bodyStream: req,
      remoteAddress: req.socket.remoteAddress,
      ...listenerRules(listener.config),
    })
    .then((result) => afterUnreadBody(req, res, () => send(res, listener, result, false)))
    .catch(() => res.destroy());
}

/** What Node's server takes for an expectation of 100 Continue, which it answers itself. */
const CONTINUE_EXPECTED = /(?:^|\W)100-continue(?:$|\W)/i;

/**
 * What the parser lets through but the API refuses, answered before any body is read: a second
 * Host header (which request was meant?), an HTTP/1.1 request without one, a transfer coding other
 * than chunked, whose body could not be read (the parser would wait for the connection to close),
 * and an expectation other than 100 Continue. (Node's server answers the last two of those itself
 * unless told not to, without an event: every request it reads passes here, which a
 * continuation's count of requests relies on, list-method.ts.)
 */
function refuseHead(req: http.IncomingMessage): HttpResult | undefined {
  const coding = req.headers['transfer-encoding'];
  if (coding !== undefined && coding.toLowerCase() !== 'chunked') {
    return jsonError(400, [`unsupported Transfer-Encoding "${coding}": only chunked is accepted`]);
  }
  if (req.httpVersion === '1.1') {
    const expect = req.headers.expect;
    if (expect !== undefined && !CONTINUE_EXPECTED.test(expect)) return jsonError(417, [`unsupported Expect "${expect}": only 100-continue is accepted`]);
    if (req.headers.host === undefined) return jsonError(400, ['missing Host header']);
  }
  const raw = req.rawHeaders;
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length === 4 && raw[i].toLowerCase() === 'host' && ++hosts > 1) return jsonError(400, ['more than one Host header']);
  }
  return undefined;
}

/** http_write_timeout: an answer not written this long after its request's head closes the connection. */
function limitWriteTime(res: http.ServerResponse, ms: number): void {
  const timer = setTimeout(() => res.destroy(), ms);
  res.once('close', () => clearTimeout(timer));
}

function send(res: http.ServerResponse, listener: ListenerContext, result: HttpResult, head: boolean, close = false): void {
  const body = result.status === 204 ? undefined : result.body;
  const headers = headersFor(listener, result, body);
  // The connection cannot carry another request (its parser failed): it closes after this answer.
  if (close) headers.push('connection', 'close');
  res.writeHead(result.status, headers);
  if (result.stream) {
    // Node drops the body of an answer to HEAD; a client that goes away mid-download ends the
    // stream, whose owner cleans up on its 'close'.
    pipeline(result.stream, res).catch(() => res.destroy());
    return;
  }
  res.end(head ? undefined : body);
}


const NO_HEADERS: HeaderList = [];

/**
 * Every header of an answer as a list, the form Node's writeHead takes fastest (a merged object
 * cost ~10 µs a request). An engine's own headers (rare) override the listener's.
 */
function headersFor(listener: ListenerContext, result: HttpResult, body: JsonBody | undefined): (string | string[])[] {
  const fixed = listener.headers.forStatus(result.status, result.defaultsOnly);
  const content = body === undefined ? NO_HEADERS : ['content-type', result.contentType ?? 'application/json', 'content-length', String(Buffer.byteLength(body))];
  if (!result.headers) return [...fixed, ...content];
  const merged: Record<string, string | string[]> = {};
  for (const list of [fixed, Object.entries(result.headers).flat(), content]) {
    for (let i = 0; i < list.length; i += 2) merged[list[i] as string] = list[i + 1];
  }
  return Object.entries(merged).flat();
}

/** How long a connection closed after an answer given before its request's body was read goes on reading that body. */
const UNREAD_BODY_WAIT_MS = 10_000;

/**
 * Gives an answer before the request's body is all read (a refusal) and reads and drops the rest.
 * When the connection closes after this answer (the client asked so), Node would close it as soon
 * as the answer is written, over the body still arriving: that resets the connection, and a
 * client still sending loses the answer. Instead the answer goes at once with our end of the
 * connection closed after it, and the body is read on until it ends, the client closes, or
 * UNREAD_BODY_WAIT_MS pass.
 */
function afterUnreadBody(req: http.IncomingMessage, res: http.ServerResponse, answer: () => void): void {
  if (req.complete) return answer();
  req.resume();
  if (!res.shouldKeepAlive) closeAfterBody(req);
  answer();
}

/** How the server closes the request's connection after its answer: half-closed until the request's body is read. */
function closeAfterBody(req: http.IncomingMessage): void {
  const socket = req.socket as Connection & { destroySoon?: () => void };
  // Node's server calls destroySoon (end, then destroy once written) to close after an answer.
  socket.destroySoon = () => {
    socket.end();
    const close = () => (socket.writableFinished ? socket.destroy() : socket.once('finish', () => socket.destroy()));
    const timer = setTimeout(() => socket.destroy(), UNREAD_BODY_WAIT_MS);
    socket.once('close', () => clearTimeout(timer));
    if (req.complete) close();
    else req.once('end', close);
  };
}

/** Marks a body over the listener's limit, which is answered with 413. */
const TOO_LARGE = Symbol('request body too large');

/** The answers to a request whose body stopped being readable (see onClientError). */
const MALFORMED_BODY = jsonError(400, ['malformed request body: the HTTP message framing is invalid']);
const REQUEST_TIMEOUT = jsonError(408, ['request timeout: the request was not received in time']);

function isEndedBody(body: Buffer | undefined | HttpResult): body is HttpResult {
  return body === MALFORMED_BODY || body === REQUEST_TIMEOUT;
}

/**
 * Requests whose body is being read, by socket: a parse error or timeout reported for the socket
 * ends the read with an answer (returns true), since the body's end will never come.
 */
const bodyReaders = new WeakMap<Connection, (answer: HttpResult) => boolean>();

/** A request's body as read: none is `undefined`. */
type ReadBody = Buffer | undefined | HttpResult | typeof TOO_LARGE;

/** Reads a request body, stopping at `limit` bytes; what needs no waiting is answered at once. */
function readBody(req: http.IncomingMessage, limit: number): ReadBody | Promise<ReadBody> {
  const declared = Number(req.headers['content-length'] ?? -1);
  if (declared > limit) {
    req.resume();
    return TOO_LARGE;
  }
  // Nothing to wait for: the parser has already seen the end of a body-less request.
  if (declared === 0 || (declared < 0 && req.headers['transfer-encoding'] === undefined)) {
    req.resume();
    return undefined;
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const socket = req.socket as Connection;
    const finish = (result: Buffer | HttpResult | typeof TOO_LARGE) => {
      bodyReaders.delete(socket);
      resolve(result);
      return true;
    };
    // An error reported once the parser has read the whole body (its end event is still to come)
    // is about what follows it on the connection.
    const failBody = (answer: HttpResult) => !req.complete && finish(answer);
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeListener('data', onData);
        req.resume();
        finish(TOO_LARGE);
        return;
      }
      chunks.push(chunk);
    };
    bodyReaders.set(socket, failBody);
    req.on('data', onData);
    req.on('end', () => finish(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    req.on('error', (err) => {
      bodyReaders.delete(socket);
      reject(err);
    });
  });
}
