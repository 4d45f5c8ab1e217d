import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Metrics } from '@svc/metrics';
import type { Operation, Response } from '@svc/framework';
import { describeRequestError, envelope, envelopeJson, errorOf, httpStatus, ServiceError, UNSUPPORTED_PATH, type OutgoingEnvelope } from '@svc/api-contract';
import { responseEnvelope, type LogicalRequest, type LogicalResult, type RequestHandler } from '@svc/core';
import { METRICS_PATH, unauthenticatedMetrics } from './metrics-endpoint';
import type { UiAssets } from './ui-assets';
import { json, jsonError, type HttpRequest, type HttpResult } from './exchange';
import { acceptVaultHeaders, decodePath, header, joinNamespace, operationFor, requestData, tokenFrom, wrapTtlFrom } from './request-parsing';

/** What the request log records of each request: never a body, a query or a header. */
export interface RequestLine {
  requestId: string;
  method: string;
  path: string;
  status: number;
  durationMs: number;
}

/**
 * Longest logical path taken (namespace included), which bounds every name in it: keys, roles,
 * namespaces. SQL storage indexes a key whole, and an index entry holds at most about 2.7 KB: a
 * longer path failed there, as a 500, after it was accepted.
 */
const MAX_PATH_BYTES = 2048;

/** The unauthenticated seal operations a listener can refuse. */
const UNAUTHED_REKEY = /^sys\/(?:rekey|rekey-recovery-key)\/(?:init|update|verify)$/;
const UNAUTHED_GENERATE_ROOT = /^sys\/generate-root\/(?:attempt|update)$/;

const NO_QUERY = new URLSearchParams();

/** A request handed to the core, with the core's result to come. */
interface CoreCall {
  logical: LogicalRequest;
  result: Promise<LogicalResult>;
}

/**
 * The HTTP side of the gateway's request path, independent of the HTTP framework: the listener's
 * checks, then the HTTP request as a logical request for the core's `RequestHandler`, then its
 * result (or error) as the HTTP answer. Status codes are chosen here and nowhere else.
 */
export class RequestPipeline {
  constructor(
    private readonly handler: RequestHandler,
    private readonly logger: Logger,
    private readonly logRequest: (line: RequestLine) => void,
    private readonly metrics: Metrics,
    /** The web UI's files; absent when the configuration says `ui = false`. */
    private readonly ui?: UiAssets,
  ) {}

  /** Not an async function (nor is `route`): every request passes here, and an async frame is an allocation more. */
  handle(req: HttpRequest): Promise<HttpResult> {
    const started = performance.now();
    const requestId = randomUUID();
    const queryStart = req.url.indexOf('?');
    const urlPath = queryStart < 0 ? req.url : req.url.slice(0, queryStart);
    const logged = (result: HttpResult): HttpResult => {
      this.logRequest({ requestId, method: req.method, path: urlPath, status: result.status, durationMs: Math.round((performance.now() - started) * 1000) / 1000 });
      return result;
    };
    const failed = (err: unknown) => logged(this.errorResult(err, requestId));
    try {
      const routed = this.route(req, requestId, urlPath, queryStart);
      if (routed instanceof Promise) return routed.then(logged, failed);
      if (!('logical' in routed)) return Promise.resolve(logged(routed));
      // The core's result becomes the HTTP answer and is logged in one step.
      const { logical, result } = routed;
      return result.then((answer) => {
        try {
          return logged(httpResult(logical, answer));
        } catch (err) {
          return failed(err);
        }
      }, failed);
    } catch (err) {
      return Promise.resolve(failed(err));
    }
  }

  /** The answer, or the request handed to the core and the core's result to come. */
  private route(req: HttpRequest, requestId: string, urlPath: string, queryStart: number): HttpResult | Promise<HttpResult> | CoreCall {
    const query = queryStart < 0 ? NO_QUERY : new URLSearchParams(req.url.slice(queryStart + 1));

    if (!urlPath.startsWith('/v1/')) return this.uiResult(urlPath);
    if (req.unauthenticatedMetrics && urlPath === METRICS_PATH) return unauthenticatedMetrics(this.metrics, req, query);

    acceptVaultHeaders(req.headers);
    if (req.requireRequestHeader && header(req, 'x-service-request') !== 'true') {
      throw ServiceError.precondition('missing required header "X-Service-Request: true"');
    }
    const logical = logicalRequest(req, requestId, urlPath, query);
    refuseUnauthedIfDisabled(req, logical.path);
    return { logical, result: this.handler.handle(logical) };
  }

  /** `/` and `/ui` lead to the UI, whose files are under `/ui/`; without the UI, nothing is there. */
  private uiResult(urlPath: string): HttpResult {
    if (!this.ui) return unknownPath();
    if (urlPath === '/' || urlPath === '/ui') return { status: 307, headers: { location: '/ui/' } };
    if (urlPath.startsWith('/ui/')) return this.ui.serve(urlPath.slice('/ui/'.length) || 'index.html');
    return unknownPath();
  }

  private errorResult(err: unknown, requestId: string): HttpResult {
    const { kind, errors } = errorOf(err);
    if (kind === 'unsupported-path') return unknownPath();
    if (kind === 'internal' && !(err instanceof ServiceError)) {
      this.logger.error({ request_id: requestId, err: describeRequestError(err) }, 'internal error');
    }
    return jsonError(httpStatus(kind), errors);
  }
}

/** The HTTP request as the core takes it. */
function logicalRequest(req: HttpRequest, id: string, urlPath: string, query: URLSearchParams): LogicalRequest {
  const operation = operationFor(req.method, query);
  let path = joinNamespace(header(req, 'x-service-namespace'), decodePath(urlPath.slice('/v1/'.length)));
  // A LIST is of a directory: `LIST keys` means `keys/`, as in Vault.
  if (operation === 'list' && !path.endsWith('/')) path += '/';
  // A UTF-16 unit is at most three UTF-8 bytes: short paths are not measured.
  if (path.length * 3 > MAX_PATH_BYTES && Buffer.byteLength(path) > MAX_PATH_BYTES) {
    throw ServiceError.badRequest(`the request path (namespace included) is longer than ${MAX_PATH_BYTES} bytes`);
  }
  return {
    id,
    operation,
    path,
    data: requestData(req, operation, query),
    token: tokenFrom(req),
    wrapTtl: wrapTtlFrom(req),
    remoteAddress: req.remoteAddress,
    accept: header(req, 'accept'),
    contentType: header(req, 'content-type'),
    body: req.bodyStream,
  };
}

/** A listener option turns off the unauthenticated rekey or generate-root calls on that listener. */
function refuseUnauthedIfDisabled(req: HttpRequest, path: string): void {
  const refused = req.refusedUnauthed;
  if (refused?.rekey && UNAUTHED_REKEY.test(path)) {
    throw ServiceError.forbidden('the unauthenticated rekey endpoints are disabled on this listener (disable_unauthed_rekey_endpoints)');
  }
  if (refused?.generateRoot && UNAUTHED_GENERATE_ROOT.test(path)) {
    throw ServiceError.forbidden('the unauthenticated generate-root endpoints are disabled on this listener (disable_unauthed_generate_root_endpoints)');
  }
}

/** The core's result as the HTTP answer. */
function httpResult(req: LogicalRequest, result: LogicalResult): HttpResult {
  switch (result.type) {
    case 'help':
      return json(200, result.help);
    case 'wrapped':
      return envelopeResult(200, envelope(req.id, { wrap_info: result.wrapInfo }));
    case 'response':
      return respond(req.operation, result.response, result.response && responseEnvelope(req.id, result.response, result.lease));
  }
}

/** The HTTP answer for an engine's response and its envelope. */
function respond(operation: Operation, response: Response | undefined, body: OutgoingEnvelope | undefined): HttpResult {
  if (operation === 'list' && isEmptyList(response)) return jsonError(404, []);
  // A read that finds nothing is a 404, as in Vault.
  if (!response || !body) return operation === 'read' ? jsonError(404, []) : { status: 204 };
  if (response.raw !== undefined) return json(response.status ?? 200, response.raw, response.headers);
  if (response.stream) return { status: response.status ?? 200, stream: response.stream, headers: response.headers };
  const hasBody = body.data !== null || body.warnings !== null || body.auth !== null || body.lease_id !== '';
  if (!hasBody) return { status: response.status ?? 204, headers: response.headers };
  return envelopeResult(response.status ?? 200, body, response.headers, response.dataAtTopLevel);
}

function envelopeResult(status: number, body: OutgoingEnvelope, headers?: Record<string, string>, dataAtTopLevel?: boolean): HttpResult {
  return { status, body: envelopeJson(body, dataAtTopLevel), contentType: 'application/json', headers };
}

function unknownPath(): HttpResult {
  return { ...jsonError(404, [UNSUPPORTED_PATH]), defaultsOnly: true };
}

/** A LIST answers 404 without keys; an answer of other data (sys/plugins/runtimes/catalog's `runtimes`) is returned as it is, as Vault does. */
function isEmptyList(response: Response | undefined): boolean {
  const data = response?.data;
  if (!data) return true;
  if ('keys' in data) return !Array.isArray(data.keys) || data.keys.length === 0;
  return Object.keys(data).length === 0;
}
