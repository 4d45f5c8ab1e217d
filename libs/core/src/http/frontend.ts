import * as http from 'node:http';
import { Module, type DynamicModule, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ListenerConfig } from '@svc/config';
import { toErrorBody } from '@svc/http';
import { bindListener, listenerOf, type BoundListener, type ListenerContext } from './listeners';
import type { HttpResult, RequestPipeline } from './pipeline';

/** The gateway's HTTP front: a NestJS application on Fastify, one catch-all route into the pipeline. */
@Module({})
class GatewayHttpModule {
  static register(): DynamicModule {
    return { module: GatewayHttpModule };
  }
}

export interface HttpFrontend {
  app: INestApplication;
  listeners: BoundListener[];
  close(): Promise<void>;
}

export async function startHttpFrontend(pipeline: RequestPipeline, listeners: ListenerConfig[]): Promise<HttpFrontend> {
  let httpServer: http.Server | undefined;
  const adapter = new FastifyAdapter({
    serverFactory: (handler: http.RequestListener) => {
      httpServer = http.createServer(handler);
      return httpServer;
    },
    logger: false,
    // Fastify's own request errors (e.g. a malformed URL) get the API's error shape too.
    frameworkErrors: (err: Error, req: FastifyRequest, reply: FastifyReply) => {
      const { status, errors } = toErrorBody(err);
      void send(reply, listenerOf(req.raw.socket), { status: status === 500 ? 400 : status, body: JSON.stringify({ errors }), contentType: 'application/json' }, false);
    },
    // Paths are routed by the core (longest-prefix mount match), not by Fastify.
    routerOptions: { ignoreDuplicateSlashes: false, maxParamLength: 8192 },
  });
  const app = await NestFactory.create<NestFastifyApplication>(GatewayHttpModule.register(), adapter, { logger: false });
  await app.init();
  const fastify = app.getHttpAdapter().getInstance() as unknown as FastifyInstance;
  registerRoutes(fastify, pipeline);
  // Fastify builds its routing tables on ready(); the server is never listen()ed itself.
  await fastify.ready();

  const bound: BoundListener[] = [];
  for (const listener of listeners) bound.push(await bindListener(listener, httpServer!));
  return {
    app,
    listeners: bound,
    close: async () => {
      await Promise.all(bound.map((l) => l.close()));
      httpServer!.closeAllConnections();
      await app.close();
    },
  };
}

function registerRoutes(fastify: FastifyInstance, pipeline: RequestPipeline): void {
  // Every method Node's parser accepts reaches the pipeline, which answers 405 for the ones the
  // API lacks (LINK is how LIST arrives; see list-method.ts).
  for (const method of http.METHODS) {
    if (method !== 'CONNECT' && !fastify.supportedMethods.includes(method)) fastify.addHttpMethod(method, { hasBody: true });
  }
  fastify.removeAllContentTypeParsers();
  // Bodies are read raw for every content type (Document 1: Content-Type is not required) and
  // limited per listener; JSON parsing happens in the pipeline so its errors have our shape.
  fastify.addContentTypeParser('*', (req, payload, done) => {
    const limit = listenerOf(req.raw.socket)?.config.maxRequestSize ?? Infinity;
    // A stream error means the client went away; no answer reaches it either way.
    readBody(payload, Number(req.headers['content-length'] ?? -1), limit).then(
      (body) => done(null, body),
      (err: Error) => done(err, undefined),
    );
  });
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.body === TOO_LARGE) {
      const limit = listenerOf(req.raw.socket)?.config.maxRequestSize;
      const body = JSON.stringify({ errors: [`request body too large: the limit is ${limit} bytes`] });
      return send(reply, listenerOf(req.raw.socket), { status: 413, body, contentType: 'application/json' }, false);
    }
    const result = await pipeline.handle({
      method: req.raw.method ?? 'GET',
      url: req.raw.url ?? '/',
      headers: req.headers,
      body: Buffer.isBuffer(req.body) ? req.body : undefined,
      remoteAddress: req.raw.socket.remoteAddress,
      requireRequestHeader: listenerOf(req.raw.socket)?.config.requireRequestHeader ?? false,
    });
    return send(reply, listenerOf(req.raw.socket), result, req.raw.method === 'HEAD');
  };
  fastify.route({ method: [...fastify.supportedMethods], url: '/*', handler });
}

/** Writes the answer straight to Node's response: no reply hooks or serializers on the hot path. */
function send(reply: FastifyReply, listener: ListenerContext | undefined, result: HttpResult, head: boolean): FastifyReply {
  const headers: Record<string, string | string[] | number> = { ...listener?.headers.forStatus(result.status, result.defaultsOnly), ...result.headers };
  const body = result.status === 204 ? undefined : result.body;
  if (body !== undefined) {
    headers['content-type'] = result.contentType ?? 'application/json';
    headers['content-length'] = Buffer.byteLength(body);
  }
  reply.hijack();
  reply.raw.writeHead(result.status, headers);
  reply.raw.end(head ? undefined : body);
  return reply;
}

/** Marks a body over the listener's limit; the route answers 413 (Fastify's error handler belongs to Nest). */
const TOO_LARGE = Symbol('request body too large');

/** Reads a request body, stopping at `limit` bytes. */
function readBody(stream: NodeJS.ReadableStream, declaredLength: number, limit: number): Promise<Buffer | typeof TOO_LARGE> {
  if (declaredLength > limit) {
    stream.resume();
    return Promise.resolve(TOO_LARGE);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        stream.removeListener('data', onData);
        stream.resume();
        resolve(TOO_LARGE);
        return;
      }
      chunks.push(chunk);
    };
    stream.on('data', onData);
    stream.on('end', () => resolve(Buffer.concat(chunks, size)));
    stream.on('error', reject);
  });
}
