import type { AuditAuth, AuditBroker, AuditRequestEntry, AuditResponse } from '@svc/audit';
import type { EngineReply, EngineRequest } from '@svc/engine-host';
import { addressAllowed, responseData, type Capability, type Caller, type IssuedToken, type MountInfo, type Response } from '@svc/framework';
import { errorOf, ServiceError } from '@svc/api-contract';
import type { Timer } from '@svc/metrics';
import type { Authorizer } from '../access/authorizer';
import type { Logins } from '../auth/logins';
import type { CoreState } from '../seal/seal-lifecycle';
import type { LeaseLifecycle } from '../leases/lease-lifecycle';
import { SYSTEM_MOUNT } from '../mounts/system-mount';
import type { Namespace } from '../namespaces/namespace';
import type { Dispatcher, RequestRouter, Routed } from '../routing/router';
import { remainingTtl, type TokenEntry, type TokenStore } from '../tokens/token-store';
import type { ResponseWrapper } from '../wrapping/response-wrapper';
import { drSecondaryRefusal, servedOnDrSecondary } from './dr-secondary-gate';
import { responseEnvelope, type Lease, type LogicalRequest, type LogicalResult } from './logical';

/** The seal state as the request path sees it. */
export interface SealState {
  readonly state: CoreState;
  /** Another gateway replica may have initialized the shared storage, or unsealed, since this one last looked. */
  refreshSealState(): Promise<CoreState>;
  /** Throws the sealed or uninitialized error. */
  assertUnsealed(): void;
}

/** Contact with the other gateway replicas (or workers), whose caches must hear of this one's writes. */
export interface ReplicaContact {
  /** Whether this process's caches may be read now. */
  readonly upToDate: boolean;
  /** Resolves once they may be, or throws 503. */
  catchUp(): Promise<void>;
  readonly hasPending: boolean;
  flush(): Promise<void>;
}

/** What the request path uses of each component of the core. */
export interface RequestHandlerDeps {
  seal: SealState;
  replicas: ReplicaContact;
  router: RequestRouter;
  tokens: Pick<TokenStore, 'cached' | 'lookup' | 'spendUse'>;
  /** Revokes a token and everything it created (a limited-use token after its last use). */
  revokeToken(accessor: string): Promise<void>;
  authorizer: Pick<Authorizer, 'capabilities'>;
  audit: Pick<AuditBroker, 'hasDevices' | 'logRequest' | 'logResponse'>;
  leases: Pick<LeaseLifecycle, 'register'>;
  /** Makes the token of a login's `auth`. */
  logins: Pick<Logins, 'complete'>;
  wrapper: Pick<ResponseWrapper, 'wrap'>;
  /**
   * The token a presented value stands for: an activation token in JWT form carries its wrapping
   * token, valid only with the primary's signature; anything else is itself. None: refused.
   */
  resolveToken?: (value: string) => string | undefined;
  dispatcher: Dispatcher;
  /** Whether this cluster is a DR secondary now: it then serves only what `servedOnDrSecondary` allows. */
  isDrSecondary?: () => boolean;
  /** Requests by namespace, mount and operation, from the mount's match to the answer. */
  requests: Timer;
}

/** Paths served while the service is uninitialized or sealed (everything else: 501 / 503). */
const UNINITIALIZED_PATHS = new Set(['sys/init', 'sys/seal-status', 'sys/health']);
const SEALED_PATHS = new Set([...UNINITIALIZED_PATHS, 'sys/unseal', 'sys/leader']);

const NO_META: Record<string, string> = Object.freeze({}) as Record<string, string>;
const NO_CAPABILITIES: ReadonlySet<Capability> = new Set();

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

/** One request as it moves through the steps. */
interface Context {
  req: LogicalRequest;
  namespace: Namespace;
  /** Path inside the namespace. */
  path: string;
  token: TokenEntry | null;
  /** An unauthenticated sys/ operation: the token's policies are not consulted. */
  outsideAcl?: boolean;
  /** Filled as the answer is made, for the audit log. */
  auditResponse?: AuditResponse;
}

/**
 * The core's request path, whatever transport brought the request: seal state, namespace and
 * mount, token, capabilities, audit, use count, dispatch, then lease and wrapping. Failures are
 * thrown as `ServiceError`s of a kind; the transport decides how a client sees them.
 */
export class RequestHandler {
  private readonly systemMounts = new WeakMap<Namespace, MountInfo>();

  constructor(private readonly deps: RequestHandlerDeps) {}

  /**
   * Not an async function: a request changes cached state only where it is served (`serve`,
   * `whileSealed`), and each of those waits there until every replica has heard of the change
   * before the caller hears back.
   */
  handle(req: LogicalRequest): Promise<LogicalResult> {
    try {
      return this.route(this.withResolvedToken(req));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private withResolvedToken(req: LogicalRequest): LogicalRequest {
    if (!req.token || !this.deps.resolveToken) return req;
    const token = this.deps.resolveToken(req.token);
    if (token === undefined) throw ServiceError.forbidden();
    return token === req.token ? req : { ...req, token };
  }

  /**
   * Not an async function, nor is `withToken`: a request in contact with its peers and with a
   * cached token reaches `serve` without an await (each is a tick and an allocation).
   */
  private route(req: LogicalRequest): Promise<LogicalResult> {
    const { seal, replicas } = this.deps;
    if (seal.state !== 'unsealed') return this.whileSealed(req);
    if (this.deps.isDrSecondary?.() && !servedOnDrSecondary(req.path)) throw drSecondaryRefusal();
    // Caches (tokens, mounts, policies, storage reads) are trusted only while up to date with the peers.
    if (!replicas.upToDate && !SEALED_PATHS.has(req.path)) return replicas.catchUp().then(() => this.routeInContact(req));
    return this.routeInContact(req);
  }

  private routeInContact(req: LogicalRequest): Promise<LogicalResult> {
    const routed = this.deps.router.route(req.path);
    const authRoute = routed.route && routed.path.startsWith('auth/') ? routed.route : undefined;
    const login = authRoute ? this.deps.router.isLogin(authRoute.mount, authRoute.path, req.operation) : false;
    if (typeof login !== 'boolean') return login.then((isLogin) => this.withLoginKnown(req, routed, isLogin));
    return this.withLoginKnown(req, routed, login);
  }

  private withLoginKnown(req: LogicalRequest, routed: Routed, login: boolean): Promise<LogicalResult> {
    const { tokens } = this.deps;
    // A login ignores a token sent with it, as Vault does on its unauthenticated paths.
    const tokenValue = login ? undefined : req.token;
    const token = tokenValue ? tokens.cached(tokenValue) : null;
    if (token === undefined) return tokens.lookup(tokenValue!).then((found) => this.withToken(req, routed, tokenValue, found));
    return this.withToken(req, routed, tokenValue, token);
  }

  private withToken(req: LogicalRequest, { namespace, path, route }: Routed, tokenValue: string | undefined, token: TokenEntry | null): Promise<LogicalResult> {
    const { router } = this.deps;
    if (tokenValue && !token) throw ServiceError.forbidden();
    if (token?.boundCidrs && !addressAllowed(token.boundCidrs, req.remoteAddress)) throw ServiceError.forbidden();
    const ctx: Context = { req: tokenValue === req.token ? req : { ...req, token: undefined }, namespace, path, token };

    if (path === 'sys' || path.startsWith('sys/')) {
      const systemPath = path.slice('sys/'.length);
      ctx.outsideAcl = token !== null && router.isUnauthenticatedSystem(systemPath, req.operation);
      return this.serve(ctx, this.systemMount(namespace), systemPath, true);
    }
    if (!route) throw ServiceError.unsupportedPath();
    // Only auth paths (logins) are reached without a token.
    if (!token && !path.startsWith('auth/')) throw ServiceError.forbidden();
    return this.serve(ctx, route.mount, route.path, router.isCoreEngine(route.mount));
  }

  /** Uninitialized or sealed: only the seal endpoints of the root namespace answer. */
  private async whileSealed(req: LogicalRequest): Promise<LogicalResult> {
    const { seal } = this.deps;
    const state = await seal.refreshSealState();
    if (state === 'unsealed') return this.route(req);
    const allowed = state === 'uninitialized' ? UNINITIALIZED_PATHS : SEALED_PATHS;
    if (!allowed.has(req.path) || req.operation === 'help') seal.assertUnsealed();
    try {
      return await this.serveSealed(req);
    } finally {
      if (this.deps.replicas.hasPending) await this.deps.replicas.flush();
    }
  }

  private async serveSealed(req: LogicalRequest): Promise<LogicalResult> {
    const reply = await this.deps.dispatcher.handleSystem({
      kind: 'operation',
      requestId: req.id,
      mount: SYSTEM_MOUNT,
      operation: req.operation,
      path: req.path.slice('sys/'.length),
      data: req.data,
      capabilities: [],
      remoteAddress: req.remoteAddress,
    });
    if (!reply.ok) throw new ServiceError(reply.kind, reply.errors);
    return { type: 'response', response: reply.response };
  }

  /** For a request whose mount is known; with audit devices, both ends are logged. */
  private async serve(ctx: Context, mount: MountInfo, mountPath: string, inProcess: boolean): Promise<LogicalResult> {
    const { audit } = this.deps;
    const started = performance.now();
    const series = this.deps.requests.series(ctx.namespace.path, mount.path, ctx.req.operation);
    const entry = audit.hasDevices ? auditEntry(ctx, mount) : undefined;
    try {
      const granted = this.authorize(ctx);
      // Capabilities usually come at once (a cached ACL): no await, which is a tick and an allocation.
      const capabilities = granted instanceof Promise ? await granted : granted;
      // An audit device that cannot record the request stops it: nothing is served unaudited.
      if (entry) await audit.logRequest(entry);
      let result: LogicalResult;
      if (ctx.token && ctx.token.numUses > 0) {
        result = await this.spendingUse(ctx.token, () => this.dispatch(ctx, mount, mountPath, inProcess, capabilities).then((reply) => this.finish(ctx, mount, reply)));
      } else {
        // The common answer needs no storage: it is finished without another await.
        const finished = this.finish(ctx, mount, await this.dispatch(ctx, mount, mountPath, inProcess, capabilities));
        result = finished instanceof Promise ? await finished : finished;
      }
      if (entry) await audit.logResponse({ ...entry, response: ctx.auditResponse });
      series.record(started, false);
      return result;
    } catch (err) {
      series.record(started, true);
      if (entry) await audit.logResponse({ ...entry, errors: errorOf(err).errors });
      throw err;
    } finally {
      if (this.deps.replicas.hasPending) await this.deps.replicas.flush();
    }
  }

  private authorize(ctx: Context): ReadonlySet<Capability> | Promise<ReadonlySet<Capability>> {
    const { token, namespace, path, req } = ctx;
    if (!token && req.operation === 'help') throw ServiceError.forbidden();
    if (ctx.outsideAcl) return NO_CAPABILITIES;
    return this.deps.authorizer.capabilities({ token, namespace, path, operation: req.operation, data: req.data, wrapTtl: req.wrapTtl });
  }

  /** A token with limited uses spends one; its last use revokes it once the request is served. */
  private async spendingUse(token: TokenEntry, serve: () => Promise<LogicalResult>): Promise<LogicalResult> {
    const use = await this.deps.tokens.spendUse(token.accessor);
    if (!use.allowed) throw ServiceError.forbidden();
    try {
      return await serve();
    } finally {
      if (use.remaining < 0) await this.deps.revokeToken(token.accessor);
    }
  }

  private dispatch(ctx: Context, mount: MountInfo, mountPath: string, inProcess: boolean, capabilities: ReadonlySet<Capability>): Promise<EngineReply> {
    const { dispatcher } = this.deps;
    const message = engineRequest(ctx, mount, mountPath, capabilities, inProcess);
    return mount.uuid === SYSTEM_MOUNT.uuid ? dispatcher.handleSystem(message) : dispatcher.dispatch(message);
  }

  /**
   * After dispatch: the engine's answer becomes the result. A login's auth becomes a token, a
   * secret gets a lease, and a requested wrapping stores the answer; all write to storage, so the
   * common answer skips them.
   */
  private finish(ctx: Context, mount: MountInfo, reply: EngineReply): LogicalResult | Promise<LogicalResult> {
    if (!reply.ok) throw new ServiceError(reply.kind, reply.errors);
    if (reply.help) return { type: 'help', help: reply.help };
    const response = reply.response;
    if (response?.auth || response?.secret || ctx.req.wrapTtl !== undefined) return this.finishWithStorage(ctx, mount, response);
    return this.answer(ctx, mount, response, undefined);
  }

  private async finishWithStorage(ctx: Context, mount: MountInfo, answered: Response | undefined): Promise<LogicalResult> {
    const { req } = ctx;
    // The login step: the token is made before the answer is wrapped, so a wrapped login holds it.
    const response = answered?.auth ? await this.deps.logins.complete({ namespace: ctx.namespace, mount, path: ctx.path }, answered) : answered;
    const lease = response?.secret ? await this.deps.leases.register(ctx.namespace, mount, ctx.path, response.secret, ctx.token?.accessor ?? '') : undefined;
    if (req.wrapTtl === undefined || !response || response.raw !== undefined || (response.status ?? 200) >= 400) return this.answer(ctx, mount, response, lease);
    const wrapInfo = await this.deps.wrapper.wrap(responseEnvelope(req.id, response, lease), req.wrapTtl, ctx.namespace, ctx.path);
    ctx.auditResponse = { mount_type: mount.type, wrap_info: wrapInfo };
    return { type: 'wrapped', wrapInfo };
  }

  private answer(ctx: Context, mount: MountInfo, response: Response | undefined, lease: Lease | undefined): LogicalResult {
    if (this.deps.audit.hasDevices) ctx.auditResponse = auditResponse(mount, response, lease);
    return { type: 'response', response, lease };
  }

  private systemMount(namespace: Namespace): MountInfo {
    let mount = this.systemMounts.get(namespace);
    if (!mount) {
      mount = { ...SYSTEM_MOUNT, namespace: namespace.path };
      this.systemMounts.set(namespace, mount);
    }
    return mount;
  }
}

function engineRequest(ctx: Context, mount: MountInfo, mountPath: string, capabilities: ReadonlySet<Capability>, inProcess: boolean): EngineRequest {
  const { token, req } = ctx;
  const caller: Caller | undefined = token
    ? {
        tokenAccessor: token.accessor,
        // The token itself never leaves the gateway process.
        tokenId: inProcess ? req.token : undefined,
        policies: token.policies,
        entityId: token.entityId,
        displayName: token.displayName,
        namespace: token.namespace,
        meta: token.meta ?? NO_META,
      }
    : undefined;
  return {
    kind: req.operation === 'help' ? 'help' : 'operation',
    requestId: req.id,
    mount,
    operation: req.operation,
    path: mountPath,
    data: req.data,
    wrapTtl: req.wrapTtl,
    accept: req.accept,
    caller,
    capabilities: capabilityList(capabilities),
    remoteAddress: req.remoteAddress,
    contentType: req.contentType,
    body: inProcess ? req.body : undefined,
  };
}

/** The audit record of a request (the devices hash the secrets in it). */
function auditEntry(ctx: Context, mount: MountInfo): AuditRequestEntry {
  const { token, req } = ctx;
  return {
    auth: token
      ? {
          client_token: req.token ?? '',
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
      id: req.id,
      operation: req.operation,
      mount_type: mount.type,
      mount_accessor: mount.accessor,
      client_token: req.token ?? '',
      client_token_accessor: token?.accessor ?? '',
      namespace: { id: ctx.namespace.record.id, path: ctx.namespace.path },
      path: ctx.path,
      data: req.data,
      remote_address: req.remoteAddress ?? '',
      wrap_ttl: req.wrapTtl ?? 0,
    },
  };
}

/** The audit record of an answer: its data as an object, whichever form the engine gave it in. */
function auditResponse(mount: MountInfo, response: Response | undefined, lease: Lease | undefined): AuditResponse {
  const data = responseData(response) ?? (response?.raw as Record<string, unknown> | undefined) ?? null;
  return {
    mount_type: mount.type,
    mount_accessor: mount.accessor,
    data,
    ...(lease ? { secret: { lease_id: lease.leaseId } } : {}),
    ...(response?.token ? { auth: auditAuth(response.token) } : {}),
    ...(response?.warnings?.length ? { warnings: response.warnings } : {}),
    status: response?.status,
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
