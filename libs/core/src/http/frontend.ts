import * as http from 'node:http';
import type { Socket } from 'node:net';
import { pipeline } from 'node:stream/promises';
import type { ListenerConfig } from '@svc/config';
import type { JsonBody } from '@svc/http';
import { bindListener, type BoundListener, type ListenerContext } from './listeners';
import type { HeaderList } from './headers';
import { onParseError, requestAnswered, requestStarted, writeAndClose } from './list-method';
import { isUploadRequest, jsonError, type HttpRequest, type HttpResult } from './pipeline';
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
        server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => serveRequest(pipeline, context, req, res));
        server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => onClientError(pipeline, context, err, socket));
        // Node hands a CONNECT over as a raw socket; this server tunnels nothing.
        server.on('connect', (_req: http.IncomingMessage, socket: Socket) =>
          writeAndClose(socket, jsonError(405, ['method CONNECT is not supported']), (result, body) => headersFor(context, result, body)),
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
 * A request the parser refused or gave up on: a LIST is served from here (list-method.ts); a
 * body that turned out malformed, or a request past its timeout, ends the request being read.
 */
function onClientError(pipeline: HttpHandler, listener: ListenerContext, err: NodeJS.ErrnoException, socket: Socket): void {
  const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
  if (bodyReaders.get(socket)?.(timedOut ? REQUEST_TIMEOUT : MALFORMED_BODY)) return;
  onParseError(err, socket, {
    serve: (req) =>
      pipeline.handle({
        method: 'LIST',
        url: req.url,
        headers: req.headers,
        body: undefined,
        remoteAddress: socket.remoteAddress,
        ...listenerRules(listener.config),
      }),
    headersFor: (result, body) => headersFor(listener, result, body),
  });
}

function serveRequest(pipeline: HttpHandler, listener: ListenerContext, req: http.IncomingMessage, res: http.ServerResponse): void {
  requestStarted(req.socket);
  const { writeMs } = listener.config.timeouts;
  if (writeMs > 0) limitWriteTime(res, writeMs);
  const refusal = refuseHead(req);
  if (refusal) {
    req.resume();
    send(res, listener, refusal, false, true);
    return;
  }
  if (isUploadRequest(req.method, req.url)) {
    serveUpload(pipeline, listener, req, res);
    return;
  }
  const limit = listener.config.maxRequestSize;
  const failed = () => {
    requestAnswered(req.socket);
    res.destroy();
  };
  const answer = (result: HttpResult) => {
    try {
      send(res, listener, result, req.method === 'HEAD');
    } catch {
      failed();
    }
  };
  const serveBody = (body: ReadBody): Promise<void> | void => {
    if (body === TOO_LARGE) return afterUnreadBody(req, res, () => send(res, listener, jsonError(413, [`request body too large: the limit is ${limit} bytes`]), false));
    if (isEndedBody(body)) return send(res, listener, body, false, true);
    return pipeline
      .handle({
        method: req.method ?? 'GET',
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
  body
    .then(
      serveBody,
      // The client went away mid-body; no answer reaches it either way.
      () => requestAnswered(req.socket),
    )
    .catch(failed);
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
    .catch(() => {
      requestAnswered(req.socket);
      res.destroy();
    });
}

/**
 * What the parser lets through but the API refuses, answered before any body is read: a second
 * Host header (which request was meant?) and a transfer coding other than chunked, whose body
 * could not be read (the parser would wait for the connection to close).
 */
function refuseHead(req: http.IncomingMessage): HttpResult | undefined {
  const coding = req.headers['transfer-encoding'];
  if (coding !== undefined && coding.toLowerCase() !== 'chunked') {
    return jsonError(400, [`unsupported Transfer-Encoding "${coding}": only chunked is accepted`]);
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
    pipeline(result.stream, res).then(
      () => requestAnswered(res.socket as Socket),
      () => res.destroy(),
    );
    return;
  }
  res.end(head ? undefined : body);
  requestAnswered(res.socket as Socket);
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

/** How long an answer given before its request's body was read waits for the rest of it. */
const UNREAD_BODY_WAIT_MS = 10_000;

/**
 * Gives an answer before the request's body is all read (a refusal), reading and dropping the
 * rest. Closing a connection over unread bytes resets it and the client loses the answer, so when
 * the connection closes after this answer (the client asked so) the answer waits for the body's
 * end, for at most UNREAD_BODY_WAIT_MS; on a kept-alive connection it leaves at once.
 */
function afterUnreadBody(req: http.IncomingMessage, res: http.ServerResponse, answer: () => void): void {
  if (req.complete) return answer();
  req.resume();
  if (res.shouldKeepAlive) return answer();
  let answered = false;
  const answerOnce = () => {
    clearTimeout(timer);
    if (!answered) answer();
    answered = true;
  };
  const timer = setTimeout(answerOnce, UNREAD_BODY_WAIT_MS);
  req.once('end', answerOnce);
  req.once('close', answerOnce);
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
const bodyReaders = new WeakMap<Socket, (answer: HttpResult) => boolean>();

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
    const socket = req.socket;
    const finish = (result: Buffer | HttpResult | typeof TOO_LARGE) => {
      bodyReaders.delete(socket);
      resolve(result);
      return true;
    };
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
    bodyReaders.set(socket, finish);
    req.on('data', onData);
    req.on('end', () => finish(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    req.on('error', (err) => {
      bodyReaders.delete(socket);
      reject(err);
    });
  });
}
