import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { JsonLimits } from '@svc/config';
import type { EngineReply, EngineRequest } from '@svc/engine-host';
import { addressAllowed, type Capability, type Caller, type IssuedToken, type MountInfo, type Operation, type Response } from '@svc/framework';
import { dataObject, envelope, envelopeJson, JsonText, jsonBody, ServiceError, toErrorBody, UNSUPPORTED_PATH, type JsonBody, type OutgoingEnvelope } from '@svc/http';
import type { Core } from '../core';
import { SYSTEM_MOUNT } from '../mounts/system-mount';
import type { Namespace } from '../namespaces/namespace';
import { remainingTtl, type TokenEntry } from '../tokens/token-store';
import type { AuditAuth, AuditRequestEntry, AuditResponse } from '@svc/audit';
import { describeRequestError } from './request-errors';
import { decodePath, header, joinNamespace, operationFor, requestData, tokenFrom, wrapTtlFrom } from './request-parsing';

export interface HttpRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer | undefined;
  remoteAddress?: string;
  requireRequestHeader: boolean;
  /** The listener's limits on a JSON body. */
  jsonLimits: JsonLimits;
}

export interface HttpResult {
  status: number;
  body?: JsonBody;
  contentType?: string;
  headers?: Record<string, string>;
  /** Unknown-path answers carry only the `default` custom headers (Document 1, rule 3). */
  defaultsOnly?: boolean;
}

/** What the request log records of each request: never a body, a query or a header. */
export interface RequestLine {
  requestId: string;
  method: string;
  path: string;
  status: number;
  durationMs: number;
}

/** Longest logical path taken (namespace included), which bounds every name in it: keys, roles, namespaces. */
const MAX_PATH_BYTES = 4096;

/** Paths served while the service is uninitialized or sealed (everything else: 501 / 503). */
const UNINITIALIZED_PATHS = new Set(['sys/init', 'sys/seal-status', 'sys/health']);
const SEALED_PATHS = new Set([...UNINITIALIZED_PATHS, 'sys/unseal', 'sys/leader']);

const NO_QUERY = new URLSearchParams();
const NO_HEADERS: HttpRequest['headers'] = Object.freeze({});
const NO_META: Record<string, string> = Object.freeze({}) as Record<string, string>;

/** Capability sets belong to policy rules and live as long as them: each is listed once. */
const capabilityLists = new WeakMap<ReadonlySet<Capability>, Capability[]>();
function capabilityList(capabilities: ReadonlySet<Capability>): Capability[] {
  let list = capabilityLists.get(capabilities);
  if (!list) {
    list = [...capabilities];
    capabilityLists.set(capabilities, list);
  }
  return list;
}

const UI_PAGE =
  '<!doctype html><html><head><meta charset="utf-8"><title>Secrets Service</title></head>' +
  '<body><h1>Secrets Service</h1><p>The web UI is not built yet. Use the HTTP API under <code>/v1/</code> or the <code>svc</code> CLI.</p></body></html>';

/** One request as it moves through the steps. */
interface Context {
  requestId: string;
  req: HttpRequest;
  operation: Operation;
  namespace: Namespace;
  /** Path inside the namespace. */
  path: string;
  data: Record<string, unknown>;
  wrapTtl?: number;
  token: TokenEntry | null;
  tokenValue?: string;
  /** Filled as the response is built, for the audit log. */
  auditResponse?: AuditResponse;
  auditErrors?: string[];
}

/**
 * The request path of the gateway (design brief, steps 1-7), independent of the HTTP framework so
 * it reads top to bottom: listener checks, path and namespace, seal state, token, capabilities,
 * dispatch, leases, wrapping, envelope.
 */
export class RequestPipeline {
  private readonly systemMounts = new WeakMap<Namespace, MountInfo>();

  constructor(
    private readonly core: Core,
    private readonly logger: Logger,
    private readonly logRequest: (line: RequestLine) => void,
  ) {}

  async handle(req: HttpRequest): Promise<HttpResult> {
    const started = performance.now();
    const requestId = randomUUID();
    let result: HttpResult;
    try {
      result = await this.route(req, requestId);
    } catch (err) {
      result = this.errorResult(err, requestId);
    }
    // Changes to cached state reach every replica before the caller hears back.
    if (this.core.replicas.hasPending) {
      try {
        await this.core.replicas.flush();
      } catch (err) {
        result = this.errorResult(err, requestId);
      }
    }
    const queryStart = req.url.indexOf('?');
    this.logRequest({
      requestId,
      method: req.method,
      path: queryStart < 0 ? req.url : req.url.slice(0, queryStart),
      status: result.status,
      durationMs: Math.round((performance.now() - started) * 1000) / 1000,
    });
    return result;
  }

  private async route(req: HttpRequest, requestId: string): Promise<HttpResult> {
    const queryStart = req.url.indexOf('?');
    const urlPath = queryStart < 0 ? req.url : req.url.slice(0, queryStart);
    const query = queryStart < 0 ? NO_QUERY : new URLSearchParams(req.url.slice(queryStart + 1));

    if (urlPath === '/' || urlPath === '/ui') return { status: 307, headers: { location: '/ui/' } };
    if (urlPath.startsWith('/ui/')) return { status: 200, body: UI_PAGE, contentType: 'text/html; charset=utf-8' };
    if (!urlPath.startsWith('/v1/')) return unknownPath();

    if (req.requireRequestHeader && header(req, 'x-service-request') !== 'true') {
      throw new ServiceError(412, ['missing required header "X-Service-Request: true"']);
    }

    const operation = operationFor(req.method, query);
    let fullPath = joinNamespace(header(req, 'x-service-namespace'), decodePath(urlPath.slice('/v1/'.length)));
    // A LIST is of a directory: `LIST keys` means `keys/`, as in Vault.
    if (operation === 'list' && !fullPath.endsWith('/')) fullPath += '/';
    // A UTF-16 unit is at most three UTF-8 bytes: short paths are not measured.
    if (fullPath.length * 3 > MAX_PATH_BYTES && Buffer.byteLength(fullPath) > MAX_PATH_BYTES) {
      throw ServiceError.badRequest(`the request path (namespace included) is longer than ${MAX_PATH_BYTES} bytes`);
    }
    const data = requestData(req, operation, query);
    const wrapTtl = wrapTtlFrom(req);

    if (this.core.state !== 'unsealed') return this.whileSealed(req, requestId, operation, fullPath, data);
    // Caches (tokens, mounts, policies, storage reads) are trusted only while in contact with the peers.
    if (!this.core.replicas.inContact && !SEALED_PATHS.has(fullPath)) await this.core.replicas.awaitContact();

    const { namespace, path, route } = this.core.route(fullPath);
    const login = route !== undefined && path.startsWith('auth/') && this.core.isLogin(route.mount, route.path, operation);
    const tokenValue = login ? undefined : tokenFrom(req);
    let token = tokenValue ? this.core.tokens.cached(tokenValue) : null;
    if (token === undefined) token = await this.core.tokens.lookup(tokenValue!);
    if (tokenValue && !token) throw ServiceError.forbidden();
    if (token?.boundCidrs && !addressAllowed(token.boundCidrs, req.remoteAddress)) throw ServiceError.forbidden();
    const ctx: Context = { requestId, req, operation, namespace, path, data, wrapTtl, token, tokenValue };

    if (path === 'sys' || path.startsWith('sys/')) return this.serve(ctx, this.systemMount(namespace), path.slice('sys/'.length), true);
    if (!route) return unknownPath();
    if (!token && !path.startsWith('auth/')) throw ServiceError.forbidden();
    return this.serve(ctx, route.mount, route.path, this.core.isCoreEngine(route.mount.type));
  }

  /** Steps 4-7 for a request whose mount is known; with audit devices, both ends are logged. */
  private async serve(ctx: Context, mount: MountInfo, mountPath: string, inProcess: boolean): Promise<HttpResult> {
    const audit = this.core.audit.broker.hasDevices ? auditEntry(ctx, mount) : undefined;
    try {
      const capabilities = await this.authorize(ctx);
      // An audit device that cannot record the request stops it: nothing is served unaudited.
      if (audit) await this.core.audit.broker.logRequest(audit);
      const dispatch = () => this.dispatch(ctx, mount, mountPath, inProcess, capabilities);
      const result = ctx.token && ctx.token.numUses > 0 ? await this.spendingUse(ctx.token, dispatch) : await dispatch();
      if (audit) await this.core.audit.broker.logResponse({ ...audit, response: ctx.auditResponse, errors: ctx.auditErrors });
      return result;
    } catch (err) {
      if (audit) await this.core.audit.broker.logResponse({ ...audit, errors: toErrorBody(err).errors });
      throw err;
    }
  }

  private authorize(ctx: Context): Promise<ReadonlySet<Capability>> {
    const { token, namespace, path, operation } = ctx;
    if (!token && operation === 'help') throw ServiceError.forbidden();
    return this.core.authorizer.capabilities({ token, namespace, path, operation, data: ctx.data, wrapTtl: ctx.wrapTtl });
  }

  /** A token with limited uses spends one; its last use revokes it once the request is served. */
  private async spendingUse(token: TokenEntry, serve: () => Promise<HttpResult>): Promise<HttpResult> {
    const use = await this.core.tokens.spendUse(token.accessor);
    if (!use.allowed) throw ServiceError.forbidden();
    try {
      return await serve();
    } finally {
      if (use.remaining < 0) await this.core.tokenManager.revokeTree(token.accessor);
    }
  }

  private async dispatch(ctx: Context, mount: MountInfo, mountPath: string, inProcess: boolean, capabilities: ReadonlySet<Capability>): Promise<HttpResult> {
    const message = this.engineRequest(ctx, mount, mountPath, capabilities, inProcess);
    const reply = await (mount.uuid === SYSTEM_MOUNT.uuid ? this.core.handleSystem(message) : this.core.dispatch(message));
    return this.finish(ctx, mount, reply);
  }

  /** Uninitialized or sealed: only the seal endpoints of the root namespace answer. */
  private async whileSealed(req: HttpRequest, requestId: string, operation: Operation, path: string, data: Record<string, unknown>): Promise<HttpResult> {
    const state = this.core.state === 'uninitialized' ? await this.core.refreshInitialized() : this.core.state;
    if (state === 'unsealed') return this.route(req, requestId);
    const allowed = state === 'uninitialized' ? UNINITIALIZED_PATHS : SEALED_PATHS;
    if (!allowed.has(path) || operation === 'help') this.core.assertUnsealed();
    const message: EngineRequest = {
      kind: 'operation',
      requestId,
      mount: SYSTEM_MOUNT,
      operation,
      path: path.slice('sys/'.length),
      data,
      headers: {},
      capabilities: [],
      remoteAddress: req.remoteAddress,
    };
    const reply = await this.core.handleSystem(message);
    if (!reply.ok) return jsonError(reply.status, reply.errors);
    return this.respond(operation, reply.response, reply.response && this.envelopeOf(requestId, reply.response));
  }

  private systemMount(namespace: Namespace): MountInfo {
    let mount = this.systemMounts.get(namespace);
    if (!mount) {
      mount = { ...SYSTEM_MOUNT, namespace: namespace.path };
      this.systemMounts.set(namespace, mount);
    }
    return mount;
  }

  private engineRequest(ctx: Context, mount: MountInfo, mountPath: string, capabilities: ReadonlySet<Capability>, inProcess: boolean): EngineRequest {
    const { token } = ctx;
    const caller: Caller | undefined = token
      ? {
          tokenAccessor: token.accessor,
          // The token itself never leaves the gateway process.
          tokenId: inProcess ? ctx.tokenValue : undefined,
          policies: token.policies,
          entityId: token.entityId,
          displayName: token.displayName,
          namespace: token.namespace,
          meta: token.meta ?? NO_META,
        }
      : undefined;
    return {
      kind: ctx.operation === 'help' ? 'help' : 'operation',
      requestId: ctx.requestId,
      mount,
      operation: ctx.operation,
      path: mountPath,
      data: ctx.data,
      // Core engines read request headers (e.g. the wrap TTL); engine services get none, as a
      // plugin gets none in Vault unless a mount passes some through.
      headers: inProcess ? ctx.req.headers : NO_HEADERS,
      caller,
      capabilities: capabilityList(capabilities),
      remoteAddress: ctx.req.remoteAddress,
      contentType: header(ctx.req, 'content-type'),
    };
  }

  /** Step 7: a login's token, lease registration and response wrapping, then the HTTP answer. */
  private finish(ctx: Context, mount: MountInfo, reply: EngineReply): HttpResult | Promise<HttpResult> {
    if (!reply.ok) {
      ctx.auditErrors = reply.errors;
      return reply.status === 404 && reply.errors[0] === UNSUPPORTED_PATH ? unknownPath() : jsonError(reply.status, reply.errors);
    }
    if (reply.help) return json(200, reply.help);
    const response = reply.response;
    if (response?.auth || response?.secret || ctx.wrapTtl !== undefined) return this.finishWithStorage(ctx, mount, response);
    return this.answer(ctx, mount, response, undefined);
  }

  /** A login's token is created, a secret's lease registered, a wrapped answer stored: all write to storage. */
  private async finishWithStorage(ctx: Context, mount: MountInfo, answered: Response | undefined): Promise<HttpResult> {
    const response = answered?.auth ? await this.core.logins.complete({ namespace: ctx.namespace, mount, path: ctx.path }, answered) : answered;
    const lease = response?.secret
      ? await this.core.leaseLifecycle.register(ctx.namespace, mount, ctx.path, response.secret, ctx.token?.accessor ?? '')
      : undefined;
    const wrapTtl = ctx.wrapTtl;
    if (wrapTtl === undefined || !response || response.raw !== undefined || (response.status ?? 200) >= 400) return this.answer(ctx, mount, response, lease);
    const wrapped = await this.core.wrapping.wrap(this.envelopeOf(ctx.requestId, response, lease), wrapTtl, ctx.namespace, ctx.path);
    ctx.auditResponse = { mount_type: mount.type, wrap_info: wrapped };
    return envelopeResult(200, envelope(ctx.requestId, { wrap_info: wrapped }));
  }

  private answer(ctx: Context, mount: MountInfo, response: Response | undefined, lease: { leaseId: string; ttl: number } | undefined): HttpResult {
    const body = response ? this.envelopeOf(ctx.requestId, response, lease) : undefined;
    if (this.core.audit.broker.hasDevices) {
      ctx.auditResponse = {
        mount_type: mount.type,
        mount_accessor: mount.accessor,
        data: body?.data ? dataObject(body.data) : ((response?.raw as Record<string, unknown> | undefined) ?? null),
        ...(lease ? { secret: { lease_id: lease.leaseId } } : {}),
        ...(response?.token ? { auth: auditAuth(response.token) } : {}),
        ...(body?.warnings ? { warnings: body.warnings } : {}),
        status: response?.status,
      };
    }
    return this.respond(ctx.operation, response, body);
  }

  private envelopeOf(requestId: string, response: Response, lease?: { leaseId: string; ttl: number }): OutgoingEnvelope {
    return envelope(requestId, {
      data: response.dataJson === undefined ? (response.data ?? null) : new JsonText(response.dataJson),
      warnings: response.warnings,
      auth: response.token?.auth ?? null,
      lease_id: lease?.leaseId ?? '',
      lease_duration: lease?.ttl ?? 0,
      renewable: lease ? (response.secret?.renewable ?? false) : false,
    });
  }

  /** The HTTP answer for an engine's response and its envelope (built once, also for the audit log). */
  private respond(operation: Operation, response: Response | undefined, body: OutgoingEnvelope | undefined): HttpResult {
    if (operation === 'list' && !hasListKeys(response)) return jsonError(404, []);
    // A read that finds nothing is a 404, as in Vault.
    if (!response || !body) return operation === 'read' ? jsonError(404, []) : { status: 204 };
    if (response.raw !== undefined) return json(response.status ?? 200, response.raw, response.headers);
    const hasBody = body.data !== null || body.warnings !== null || body.auth !== null || body.lease_id !== '';
    if (!hasBody) return { status: response.status ?? 204, headers: response.headers };
    return envelopeResult(response.status ?? 200, body, response.headers, response.dataAtTopLevel);
  }

  private errorResult(err: unknown, requestId: string): HttpResult {
    const { status, errors } = toErrorBody(err);
    if (status >= 500 && !(err instanceof ServiceError)) {
      this.logger.error({ request_id: requestId, err: describeRequestError(err) }, 'internal error');
    }
    return jsonError(status, errors);
  }
}

/** The audit record of a request (the devices hash the secrets in it). */
function auditEntry(ctx: Context, mount: MountInfo): AuditRequestEntry {
  const { token } = ctx;
  return {
    auth: token
      ? {
          client_token: ctx.tokenValue ?? '',
          accessor: token.accessor,
          display_name: token.displayName,
          policies: token.policies,
          token_policies: token.policies,
          metadata: token.meta,
          entity_id: token.entityId,
          token_type: token.type,
          token_ttl: remainingTtl(token),
          num_uses: Math.max(0, token.numUses),
        }
      : undefined,
    request: {
      id: ctx.requestId,
      operation: ctx.operation,
      mount_type: mount.type,
      mount_accessor: mount.accessor,
      client_token: ctx.tokenValue ?? '',
      client_token_accessor: token?.accessor ?? '',
      namespace: { id: ctx.namespace.record.id, path: ctx.namespace.path },
      path: ctx.path,
      data: ctx.data,
      remote_address: ctx.req.remoteAddress ?? '',
      wrap_ttl: ctx.wrapTtl ?? 0,
    },
  };
}

/** A token issued by the request (login, token creation) as the audit log records it (the devices hash its value). */
function auditAuth({ auth, displayName }: IssuedToken): AuditAuth {
  return {
    client_token: auth.client_token,
    accessor: auth.accessor,
    display_name: displayName,
    policies: auth.policies,
    token_policies: auth.token_policies,
    metadata: auth.metadata,
    entity_id: auth.entity_id,
    token_type: auth.token_type,
    token_ttl: auth.lease_duration,
    num_uses: auth.num_uses,
  };
}

function json(status: number, value: unknown, headers?: Record<string, string>): HttpResult {
  return { status, body: jsonBody(value), contentType: 'application/json', headers };
}

function envelopeResult(status: number, body: OutgoingEnvelope, headers?: Record<string, string>, dataAtTopLevel?: boolean): HttpResult {
  return { status, body: envelopeJson(body, dataAtTopLevel), contentType: 'application/json', headers };
}

/** The API's error answer, `{"errors": [...]}`, for every status ≥ 400. */
export function jsonError(status: number, errors: string[]): HttpResult {
  return json(status, { errors });
}

function unknownPath(): HttpResult {
  return { ...jsonError(404, [UNSUPPORTED_PATH]), defaultsOnly: true };
}

function hasListKeys(response: Response | undefined): boolean {
  const keys = response?.data?.keys;
  return Array.isArray(keys) && keys.length > 0;
}
