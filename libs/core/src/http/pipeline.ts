import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { EngineReply, EngineRequest } from '@svc/engine-host';
import type { Capability, Caller, MountInfo, Operation, Response } from '@svc/framework';
import { envelope, ServiceError, toErrorBody, UNSUPPORTED_PATH } from '@svc/http';
import type { Core } from '../core';
import { SYSTEM_MOUNT } from '../mounts/system-mount';
import type { TokenEntry } from '../tokens/token-store';
import { describeRequestError } from './request-errors';

export interface HttpRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer | undefined;
  remoteAddress?: string;
  requireRequestHeader: boolean;
}

export interface HttpResult {
  status: number;
  body?: string;
  contentType?: string;
  headers?: Record<string, string>;
  /** Unknown-path answers carry only the `default` custom headers (Document 1, rule 3). */
  defaultsOnly?: boolean;
}

/** Paths served while the service is uninitialized or sealed (everything else: 501 / 503). */
const UNINITIALIZED_PATHS = new Set(['sys/init', 'sys/seal-status', 'sys/health']);
const SEALED_PATHS = new Set([...UNINITIALIZED_PATHS, 'sys/unseal', 'sys/leader']);


const ROOT_CAPABILITIES: ReadonlySet<Capability> = new Set(['root']);
const NO_CAPABILITIES: ReadonlySet<Capability> = new Set();

const UI_PAGE =
  '<!doctype html><html><head><meta charset="utf-8"><title>Secrets Service</title></head>' +
  '<body><h1>Secrets Service</h1><p>The web UI is not built yet. Use the HTTP API under <code>/v1/</code> or the <code>svc</code> CLI.</p></body></html>';

/**
 * The request path of the gateway (design brief, steps 1-7), independent of the HTTP framework so
 * it reads top to bottom: listener checks, path and namespace, seal state, token, capabilities,
 * dispatch, envelope.
 */
export class RequestPipeline {
  constructor(
    private readonly core: Core,
    private readonly logger: Logger,
  ) {}

  async handle(req: HttpRequest): Promise<HttpResult> {
    const started = process.hrtime.bigint();
    const requestId = randomUUID();
    const result = await this.route(req, requestId).catch((err) => this.errorResult(err, requestId));
    // Changes to cached state reach every replica before the caller hears back.
    await this.core.replicas.flush();
    this.logger.info(
      {
        request_id: requestId,
        method: req.method === 'LINK' ? 'LIST' : req.method,
        path: req.url.split('?')[0],
        status: result.status,
        duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
      },
      'request',
    );
    return result;
  }

  private async route(req: HttpRequest, requestId: string): Promise<HttpResult> {
    const queryStart = req.url.indexOf('?');
    const urlPath = queryStart < 0 ? req.url : req.url.slice(0, queryStart);
    const query = new URLSearchParams(queryStart < 0 ? '' : req.url.slice(queryStart + 1));

    if (urlPath === '/') return { status: 307, headers: { location: '/ui/' } };
    if (urlPath === '/ui') return { status: 307, headers: { location: '/ui/' } };
    if (urlPath.startsWith('/ui/')) return { status: 200, body: UI_PAGE, contentType: 'text/html; charset=utf-8' };
    if (!urlPath.startsWith('/v1/')) return unknownPath();

    if (req.requireRequestHeader && header(req, 'x-service-request') !== 'true') {
      throw new ServiceError(412, ['missing required header "X-Service-Request: true"']);
    }

    const operation = operationFor(req.method, query);
    const path = joinNamespace(header(req, 'x-service-namespace'), decodePath(urlPath.slice('/v1/'.length)));
    const data = requestData(req, operation, query);

    if (path.startsWith('sys/') || path === 'sys') return this.handleSystem(req, requestId, operation, path, data);
    this.core.assertUnsealed();

    const route = this.core.route(path);
    if (!route) return unknownPath();
    const token = await this.authenticate(req);
    if (!token && !path.startsWith('auth/')) throw ServiceError.forbidden();
    const capabilities = token ? this.capabilities(token) : NO_CAPABILITIES;
    const message = this.engineRequest(req, requestId, operation, route.mount, route.path, data, token, capabilities);
    return this.finish(requestId, operation, await this.core.dispatch(message));
  }

  private async handleSystem(
    req: HttpRequest,
    requestId: string,
    operation: Operation,
    path: string,
    data: Record<string, unknown>,
  ): Promise<HttpResult> {
    const state = this.core.state === 'uninitialized' ? await this.core.refreshInitialized() : this.core.state;
    if (state === 'uninitialized' && !UNINITIALIZED_PATHS.has(path)) this.core.assertUnsealed();
    if (state === 'sealed' && !SEALED_PATHS.has(path)) this.core.assertUnsealed();

    const relative = path.slice('sys/'.length);
    const info = this.core.system.operationInfo(relative, operation === 'help' ? 'read' : operation);
    let token: TokenEntry | null = null;
    if (!info?.unauthenticated || operation === 'help') {
      if (state !== 'unsealed') this.core.assertUnsealed();
      token = await this.authenticate(req);
      if (!token) throw ServiceError.forbidden();
    }
    const capabilities = token ? this.capabilities(token) : NO_CAPABILITIES;
    const message = this.engineRequest(req, requestId, operation, SYSTEM_MOUNT, relative, data, token, capabilities);
    return this.finish(requestId, operation, await this.core.handleSystem(message));
  }

  private async authenticate(req: HttpRequest): Promise<TokenEntry | null> {
    const token = tokenFrom(req);
    if (!token) return null;
    const entry = await this.core.tokens.lookup(token);
    if (!entry) throw ServiceError.forbidden();
    return entry;
  }

  /** Capabilities of a token on a path. Only the root policy exists until ACL policies land. */
  private capabilities(token: TokenEntry): ReadonlySet<Capability> {
    return token.policies.includes('root') ? ROOT_CAPABILITIES : NO_CAPABILITIES;
  }

  private engineRequest(
    req: HttpRequest,
    requestId: string,
    operation: Operation,
    mount: MountInfo,
    path: string,
    data: Record<string, unknown>,
    token: TokenEntry | null,
    capabilities: ReadonlySet<Capability>,
  ): EngineRequest {
    const caller: Caller | undefined = token
      ? {
          tokenAccessor: token.accessor,
          policies: token.policies,
          entityId: '',
          displayName: token.displayName,
          namespace: token.namespace,
          meta: token.meta ?? {},
        }
      : undefined;
    return {
      kind: operation === 'help' ? 'help' : 'operation',
      requestId,
      mount,
      operation,
      path,
      data,
      headers: forwardedHeaders(req.headers),
      caller,
      capabilities: [...capabilities],
      remoteAddress: req.remoteAddress,
      contentType: header(req, 'content-type'),
    };
  }

  private finish(requestId: string, operation: Operation, reply: EngineReply): HttpResult {
    if (!reply.ok) return reply.status === 404 && reply.errors[0] === UNSUPPORTED_PATH ? unknownPath() : jsonError(reply.status, reply.errors);
    if (reply.help) return json(200, reply.help);
    const response: Response | undefined = reply.response;
    if (operation === 'list' && !hasListKeys(response)) return jsonError(404, []);
    if (!response) return { status: 204 };
    if (response.raw !== undefined) return json(response.status ?? 200, response.raw, response.headers);
    const hasBody = response.data != null || (response.warnings?.length ?? 0) > 0 || response.auth != null;
    if (!hasBody) return { status: response.status ?? 204, headers: response.headers };
    return json(
      response.status ?? 200,
      envelope(requestId, {
        data: response.data ?? null,
        warnings: response.warnings,
        lease_duration: response.secret?.ttl ?? 0,
        renewable: response.secret?.renewable ?? false,
      }),
      response.headers,
    );
  }

  private errorResult(err: unknown, requestId: string): HttpResult {
    const { status, errors } = toErrorBody(err);
    if (status >= 500 && !(err instanceof ServiceError)) {
      this.logger.error({ request_id: requestId, err: describeRequestError(err) }, 'internal error');
    }
    return jsonError(status, errors);
  }
}

function json(status: number, value: unknown, headers?: Record<string, string>): HttpResult {
  return { status, body: JSON.stringify(value), contentType: 'application/json', headers };
}

function jsonError(status: number, errors: string[]): HttpResult {
  return json(status, { errors });
}

function unknownPath(): HttpResult {
  return { ...jsonError(404, [UNSUPPORTED_PATH]), defaultsOnly: true };
}

function hasListKeys(response: Response | undefined): boolean {
  const keys = response?.data?.keys;
  return Array.isArray(keys) && keys.length > 0;
}

function header(req: HttpRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function tokenFrom(req: HttpRequest): string | undefined {
  const direct = header(req, 'x-service-token');
  if (direct) return direct;
  const auth = header(req, 'authorization');
  if (auth && /^bearer\s+/i.test(auth)) return auth.replace(/^bearer\s+/i, '').trim() || undefined;
  return undefined;
}

/** Headers an engine may see; credentials are stripped so they never travel further. */
function forwardedHeaders(headers: HttpRequest['headers']): HttpRequest['headers'] {
  const out: HttpRequest['headers'] = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name !== 'x-service-token' && name !== 'authorization' && name !== 'cookie') out[name] = value;
  }
  return out;
}

function operationFor(method: string, query: URLSearchParams): Operation {
  if (query.get('help') === '1' || query.get('help') === 'true') return 'help';
  switch (method) {
    case 'GET':
    case 'HEAD':
      return query.get('list') === 'true' ? 'list' : 'read';
    case 'LINK': // LIST on the wire; see list-method.ts
      return 'list';
    case 'POST':
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return 'delete';
    default:
      throw ServiceError.methodNotAllowed(`unsupported method ${method}`);
  }
}

function decodePath(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw ServiceError.badRequest('malformed percent-encoding in the request path');
  }
}

/** Document 1, convention 8: header namespace joined with the request path. */
function joinNamespace(namespace: string | undefined, path: string): string {
  const ns = (namespace ?? '').replace(/^\/+|\/+$/g, '');
  return ns ? `${ns}/${path.replace(/^\/+/, '')}` : path.replace(/^\/+/, '');
}

/** JSON body for writes; query parameters for reads and lists (Document 1, convention 6). */
function requestData(req: HttpRequest, operation: Operation, query: URLSearchParams): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  if (operation === 'read' || operation === 'list' || operation === 'delete' || operation === 'help') {
    for (const [key, value] of query) if (key !== 'list' && key !== 'help') data[key] = value;
  }
  if (!req.body || req.body.length === 0) return data;
  let parsed: unknown;
  try {
    parsed = JSON.parse(req.body.toString('utf8'));
  } catch (err) {
    throw ServiceError.badRequest(`failed to parse JSON input: ${(err as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw ServiceError.badRequest('request body must be a JSON object');
  }
  return Object.assign(data, parsed);
}
