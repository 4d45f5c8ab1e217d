import * as http from 'node:http';
import type { Socket } from 'node:net';
import type { ListenerConfig } from '@svc/config';
import type { JsonBody } from '@svc/http';
import { bindListener, listenerOf, type BoundListener, type ListenerContext } from './listeners';
import type { HeaderList } from './headers';
import { onParseError, requestAnswered, requestStarted } from './list-method';
import { jsonError, type HttpResult, type RequestPipeline } from './pipeline';

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

export async function startHttpFrontend(pipeline: RequestPipeline, listeners: ListenerConfig[]): Promise<HttpFrontend> {
  const httpServer = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => serveRequest(pipeline, req, res));
  httpServer.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => onClientError(pipeline, err, socket));
  const bound: BoundListener[] = [];
  for (const listener of listeners) bound.push(await bindListener(listener, httpServer));
  return {
    listeners: bound,
    close: async () => {
      await Promise.all(bound.map((l) => l.close()));
      httpServer.closeAllConnections();
    },
  };
}

/** A request the parser refused: a LIST is served from here, anything else answered 400/431 (list-method.ts). */
function onClientError(pipeline: RequestPipeline, err: NodeJS.ErrnoException, socket: Socket): void {
  const listener = listenerOf(socket);
  onParseError(err, socket, {
    serve: (req) =>
      pipeline.handle({
        method: 'LIST',
        url: req.url,
        headers: req.headers,
        body: undefined,
        remoteAddress: socket.remoteAddress,
        requireRequestHeader: listener?.config.requireRequestHeader ?? false,
      }),
    headersFor: (result, body) => headersFor(listener, result, body),
  });
}

function serveRequest(pipeline: RequestPipeline, req: http.IncomingMessage, res: http.ServerResponse): void {
  const listener = listenerOf(req.socket);
  requestStarted(req.socket);
  const limit = listener?.config.maxRequestSize ?? Infinity;
  readBody(req, limit).then(
    (body) => {
      if (body === TOO_LARGE) return send(res, listener, jsonError(413, [`request body too large: the limit is ${limit} bytes`]), false);
      return pipeline
        .handle({
          method: req.method ?? 'GET',
          url: req.url ?? '/',
          headers: req.headers,
          body,
          remoteAddress: req.socket.remoteAddress,
          requireRequestHeader: listener?.config.requireRequestHeader ?? false,
        })
        .then((result) => send(res, listener, result, req.method === 'HEAD'));
    },
    // The client went away mid-body; no answer reaches it either way.
    () => requestAnswered(req.socket),
  ).catch(() => {
    requestAnswered(req.socket);
    res.destroy();
  });
}

function send(res: http.ServerResponse, listener: ListenerContext | undefined, result: HttpResult, head: boolean): void {
  const body = result.status === 204 ? undefined : result.body;
  res.writeHead(result.status, headersFor(listener, result, body));
  res.end(head ? undefined : body);
  requestAnswered(res.socket as Socket);
}

const NO_HEADERS: HeaderList = [];

/**
 * Every header of an answer as a list, the form Node's writeHead takes fastest (a merged object
 * cost ~10 µs a request). An engine's own headers (rare) override the listener's.
 */
function headersFor(listener: ListenerContext | undefined, result: HttpResult, body: JsonBody | undefined): (string | string[])[] {
  const fixed = listener?.headers.forStatus(result.status, result.defaultsOnly) ?? NO_HEADERS;
  const content = body === undefined ? NO_HEADERS : ['content-type', result.contentType ?? 'application/json', 'content-length', String(Buffer.byteLength(body))];
  if (!result.headers) return [...fixed, ...content];
  const merged: Record<string, string | string[]> = {};
  for (const list of [fixed, Object.entries(result.headers).flat(), content]) {
    for (let i = 0; i < list.length; i += 2) merged[list[i] as string] = list[i + 1];
  }
  return Object.entries(merged).flat();
}

/** Marks a body over the listener's limit, which is answered with 413. */
const TOO_LARGE = Symbol('request body too large');

/** Reads a request body, stopping at `limit` bytes; no body is `undefined`. */
function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer | undefined | typeof TOO_LARGE> {
  const declared = Number(req.headers['content-length'] ?? -1);
  if (declared > limit) {
    req.resume();
    return Promise.resolve(TOO_LARGE);
  }
  // Nothing to wait for: the parser has already seen the end of a body-less request.
  if (declared === 0 || (declared < 0 && req.headers['transfer-encoding'] === undefined)) {
    req.resume();
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeListener('data', onData);
        req.resume();
        resolve(TOO_LARGE);
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    req.on('error', reject);
  });
}
