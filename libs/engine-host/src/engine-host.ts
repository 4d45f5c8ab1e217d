import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Backend, Capability, MountInfo, PathOperation, Request } from '@svc/framework';
import type { Logger } from 'pino';
import type { Bus, Subscription } from '@svc/bus';
import { decodeJson, encodeJson } from '@svc/bus';
import { describeRequestError, errorOf, ServiceError } from '@svc/api-contract';
import type { Metrics, Timer } from '@svc/metrics';
import { createView, type Barrier } from '@svc/storage';
import {
  mountInvalidationSubject,
  mountRemovedSubject,
  type EngineReply,
  type EngineRequest,
  type MountInvalidation,
} from './protocol';
import type { BackendFactory, EngineContext } from './registry';

/** Where sys/policies/password keeps policies, readable by every engine through its context. */
export function passwordPolicyKey(namespace: string, name: string): string {
  return `sys/password-policy/${encodeURIComponent(namespace || 'root')}/${name}`;
}

/** Capability sets are few (combinations of nine names): each is built once. */
const capabilitySets = new Map<string, ReadonlySet<Capability>>();
function capabilitySet(list: readonly Capability[]): ReadonlySet<Capability> {
  const key = list.join(',');
  let set = capabilitySets.get(key);
  if (!set) {
    set = new Set(list);
    capabilitySets.set(key, set);
  }
  return set;
}

const MOUNT_DATA_PREFIX = 'logical/';

/** Where a mount's data lives inside the barrier: a mount sees nothing else. */
export function mountStoragePrefix(mount: Pick<MountInfo, 'uuid'>): string {
  return `${MOUNT_DATA_PREFIX}${mount.uuid}/`;
}

/** The mount whose storage holds a barrier key, and the key inside it; undefined outside mount storage. */
export function mountOfKey(key: string): { uuid: string; key: string } | undefined {
  if (!key.startsWith(MOUNT_DATA_PREFIX)) return undefined;
  const slash = key.indexOf('/', MOUNT_DATA_PREFIX.length);
  return slash < 0 ? undefined : { uuid: key.slice(MOUNT_DATA_PREFIX.length, slash), key: key.slice(slash + 1) };
}

/** A mount's backend and the options it was built for; `initialized` once its `initialize` resolved. */
interface MountedBackend {
  backend: Backend;
  options: Record<string, string>;
  initialized: boolean;
  initializing?: Promise<void>;
}

/**
 * Runs the backends of one service (or the gateway's core engines) for every mount of their
 * types. A backend is built once per mount with the mount's storage and initialized before its
 * first request; a change of the mount's options (a kv mount tuned to version 2) builds it anew,
 * as Vault reloads a backend on a tune of its options. Disabling the mount or stopping the
 * process cleans it up.
 */
/** Set while a request marked `replicatedReadOnly` is served, including what it starts meanwhile. */
const readOnlyRequests = new AsyncLocalStorage<true>();

/**
 * The write guard of an engine service's own barrier (another process than the gateway's): a write
 * made while serving a request the gateway marked `replicatedReadOnly` is refused.
 */
export function writableOutsideReadOnlyRequests(): boolean {
  return readOnlyRequests.getStore() !== true;
}

export class EngineHost {
  private readonly mounts = new Map<string, MountedBackend>();

  private readonly services: Omit<EngineContext, 'storage'>;

  /** Messages served, by service, namespace, mount and operation (shared by the hosts of a process). */
  private readonly requests?: Timer;

  constructor(
    readonly service: string,
    private readonly factories: Record<string, BackendFactory>,
    private readonly barrier: Barrier,
    { locks, logger, metrics }: Pick<EngineContext, 'locks' | 'logger'> & { metrics?: Metrics },
    /** The gateway's own host serves sys/ while sealed; a service has nothing to offer then. */
    private readonly requireUnsealed = true,
  ) {
    const shared = createView(barrier, '');
    this.requests = metrics?.timer('engine.handle_request', 'Requests served by engine hosts, by service, namespace, mount and operation', ['service', 'namespace', 'mount', 'operation']);
    this.services = {
      locks,
      logger,
      passwordPolicy: async (namespace, name) => (await shared.get(passwordPolicyKey(namespace, name)))?.toString('utf8'),
    };
  }

  /**
   * Serves one message from the gateway and logs it at debug: the gateway's request id, where and
   * what, the outcome and how long it took; never the request's or the response's data. Not an
   * async function: every request of every engine passes here, and an operation on a ready mount
   * reaches its backend and comes back in one step.
   */
  handle(message: EngineRequest): Promise<EngineReply> {
    const started = performance.now();
    const served = (reply: EngineReply) => this.served(message, started, reply);
    const failed = (err: unknown) => served(errorReply(err, message, this.services.logger));
    try {
      if (this.requireUnsealed && this.barrier.sealed) throw ServiceError.sealed(`service ${this.service} is sealed`);
      const mounted = this.forMount(message.mount);
      if (mounted.initialized && message.kind === 'operation' && !message.replicatedReadOnly) {
        const { backend } = mounted;
        return backend.handle(backendRequest(backend, message)).then((response) => served({ ok: true, response }), failed);
      }
      return this.serveMounted(mounted, message).then(served, failed);
    } catch (err) {
      return Promise.resolve(failed(err));
    }
  }

  private async serveMounted(mounted: MountedBackend, message: EngineRequest): Promise<EngineReply> {
    if (!mounted.initialized) await this.initialized(message.mount.uuid, mounted);
    return message.replicatedReadOnly ? readOnlyRequests.run(true, () => serveBackend(mounted.backend, message)) : serveBackend(mounted.backend, message);
  }

  /** Records a message's outcome (the timer, and the debug line); answers its reply. */
  private served(message: EngineRequest, started: number, reply: EngineReply): EngineReply {
    const { logger } = this.services;
    this.requests?.series(this.service, message.mount.namespace, message.mount.path, message.operation).record(started, !reply.ok);
    if (logger.isLevelEnabled('debug')) {
      logger.debug(
        {
          request_id: message.requestId,
          kind: message.kind,
          namespace: message.mount.namespace,
          mount: message.mount.path,
          path: message.path,
          operation: message.operation,
          outcome: reply.ok ? 'ok' : reply.kind,
          ...(reply.ok ? {} : { errors: reply.errors }),
          duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
        },
        'request served',
      );
    }
    return reply;
  }

  /** Whether an operation of a mount's backend is unauthenticated (a login), for the gateway to know before it checks a token. */
  isUnauthenticated(mount: MountInfo, path: string, operation: PathOperation): boolean {
    return this.forMount(mount).backend.operationInfo(path, operation)?.unauthenticated === true;
  }

  /**
   * Barrier keys another replica changed: the backends of their mounts drop what they cached of
   * them (keys outside mount storage are not theirs).
   */
  invalidate(keys: readonly string[]): void {
    for (const key of keys) {
      const inMount = mountOfKey(key);
      if (inMount) this.mounts.get(inMount.uuid)?.backend.invalidate(inMount.key);
    }
  }

  /** Drops (and cleans up) the backend of a mount that was disabled. */
  forget(uuid: string): void {
    const entry = this.mounts.get(uuid);
    this.mounts.delete(uuid);
    if (entry) void this.cleanup(entry.backend);
  }

  /** Cleans up every backend (connection pools, timers) when the process stops. */
  async closeAll(): Promise<void> {
    const backends = [...this.mounts.values()].map((entry) => entry.backend);
    this.mounts.clear();
    await Promise.all(backends.map((backend) => this.cleanup(backend)));
  }

  /**
   * Follows the cluster for this host's backends: a mount disabled anywhere is cleaned up here, and
   * writes this replica makes to mount storage are broadcast to the other replicas of the service,
   * whose backends drop what they cached of those keys. (The service's requests reach `handle`
   * through its transport.) `shareWrites` is false where every replica follows the store's own
   * change feed, which tells them of those writes already.
   */
  follow(bus: Bus, subjectPrefix?: string, shareWrites = true): Subscription {
    const removals = bus.subscribe(mountRemovedSubject(subjectPrefix), (msg) => this.forget(decodeJson<{ uuid: string }>(msg.payload).uuid));
    const stopInvalidations = shareWrites ? this.shareInvalidations(bus, mountInvalidationSubject(this.service, subjectPrefix)) : () => undefined;
    return {
      unsubscribe: () => {
        removals.unsubscribe();
        stopInvalidations();
      },
    };
  }

  /** Registers a backend that is not built per mount (the gateway's sys/ backend). */
  register(mount: MountInfo, backend: Backend): void {
    this.mounts.set(mount.uuid, { backend, options: mount.options, initialized: true });
  }

  /** The mount's backend, built for the options the mount has now. */
  private forMount(mount: MountInfo): MountedBackend {
    const entry = this.mounts.get(mount.uuid);
    if (entry && sameOptions(entry.options, mount.options)) return entry;
    if (entry) this.forget(mount.uuid);
    const factory = this.factories[mount.type];
    if (!factory) throw ServiceError.badRequest(`service ${this.service} does not serve mount type "${mount.type}"`);
    const built: MountedBackend = {
      backend: factory(mount, { ...this.services, storage: createView(this.barrier, mountStoragePrefix(mount)) }),
      options: mount.options,
      initialized: false,
    };
    this.mounts.set(mount.uuid, built);
    return built;
  }

  /** Runs `initialize` once for concurrent first requests; a failure drops the backend so the next request retries. */
  private async initialized(uuid: string, entry: MountedBackend): Promise<void> {
    entry.initializing ??= entry.backend.initialize().then(
      () => {
        entry.initialized = true;
      },
      (err: unknown) => {
        if (this.mounts.get(uuid) === entry) this.forget(uuid);
        throw err;
      },
    );
    await entry.initializing;
  }

  private async cleanup(backend: Backend): Promise<void> {
    await backend.cleanup().catch((err: unknown) => this.services.logger.warn({ mount_type: backend.type, err: describeRequestError(err) }, 'backend cleanup failed'));
  }

  /**
   * Publishes this replica's writes to mount storage, once per event-loop turn, and applies the
   * other replicas' (and replication's). On a bus of its own there is no other replica to tell.
   */
  private shareInvalidations(bus: Bus, subject: string): () => void {
    const sender = randomUUID();
    let pending: string[] = [];
    const stopWatching = bus.alone
      ? () => undefined
      : this.barrier.onWrite(({ key }) => {
          if (!key.startsWith(MOUNT_DATA_PREFIX)) return;
          if (pending.length === 0) {
            setImmediate(() => {
              const keys = pending;
              pending = [];
              bus.publish(subject, encodeJson({ sender, keys } satisfies MountInvalidation)).catch((err: unknown) => this.services.logger.warn({ err: describeRequestError(err) }, 'publishing cache invalidations failed'));
            });
          }
          pending.push(key);
        });
    const received = bus.subscribe(subject, (msg) => {
      const invalidation = decodeJson<MountInvalidation>(msg.payload);
      if (invalidation.sender !== sender) this.invalidate(invalidation.keys);
    });
    return () => {
      stopWatching();
      received.unsubscribe();
    };
  }
}

/** Runs one message on a mount's backend. */
export function serveBackend(backend: Backend, message: EngineRequest): Promise<EngineReply> {
  try {
    if (message.kind === 'operation') return answerOperation(backend, message);
    return serveMessage(backend, message);
  } catch (err) {
    return Promise.reject(err);
  }
}

/** An operation, the message almost every request is: its answer without another async frame. */
function answerOperation(backend: Backend, message: EngineRequest): Promise<EngineReply> {
  return backend.handle(backendRequest(backend, message)).then((response) => ({ ok: true, response }));
}

async function serveMessage(backend: Backend, message: Exclude<EngineRequest, { kind: 'operation' }>): Promise<EngineReply> {
  const req = backendRequest(backend, message);
  switch (message.kind) {
    case 'help':
      return { ok: true, help: backend.help(message.path) };
    case 'logins':
      return { ok: true, logins: backend.logins() };
    case 'renew':
      return { ok: true, response: await backend.renewSecret(req, message.secretType, message.internalData) };
    case 'renew-auth':
      return { ok: true, response: { auth: await backend.renewAuth(req, message.auth) } };
    case 'periodic':
      await backend.periodic();
      return { ok: true };
    case 'revoke':
      await backend.revokeSecret(req, message.secretType, message.internalData);
      return { ok: true };
  }
}

/** The message as the backend's request; the operation flags are enforced here, for every engine alike. */
function backendRequest(backend: Backend, message: EngineRequest): Request {
  const open = message.kind === 'operation' && enforceOperationFlags(backend, message);
  return {
    requestId: message.requestId,
    operation: message.operation,
    path: message.path,
    data: message.data,
    wrapTtl: message.wrapTtl,
    accept: message.accept,
    mount: message.mount,
    caller: message.caller,
    // Unauthenticated operations (init, login) are outside the ACL, as in Vault.
    capabilities: open ? UNRESTRICTED : capabilitySet(message.capabilities),
    remoteAddress: message.remoteAddress,
    contentType: message.contentType,
    body: message.body,
  };
}

/** The reply for a failed message; the caller sees only "internal error", the log is where an operator finds the cause. */
export function errorReply(err: unknown, message: Pick<EngineRequest, 'requestId' | 'mount' | 'path'>, logger: Logger): EngineReply {
  if (!(err instanceof ServiceError)) logger.error({ request_id: message.requestId, mount: message.mount.path, path: message.path, err: describeRequestError(err) }, 'internal error');
  return { ok: false, ...errorOf(err) };
}

/**
 * Mount options are a few short strings: compared member by member on every request. A message
 * may carry them as null, as sys/mounts shows a mount without options.
 */
export function sameOptions(built: Record<string, string> | null, current: Record<string, string> | null): boolean {
  if (built === current) return true;
  const a = built ?? {};
  const b = current ?? {};
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) if (a[key] !== b[key]) return false;
  return true;
}

const UNRESTRICTED: ReadonlySet<Capability> = new Set(['root']);

/**
 * Sudo, root-namespace and unauthenticated markings of the operation being called. Returns
 * whether the operation is unauthenticated (and so not subject to capabilities).
 */
function enforceOperationFlags(backend: Backend, message: EngineRequest): boolean {
  const info = backend.operationInfo(message.path, message.operation as PathOperation);
  if (!info) return false; // the backend answers 404 or 405 itself
  // Unauthenticated operations too (a DR secondary's, authorized by a DR operation token).
  if (info.rootNamespace && message.mount.namespace !== '') {
    throw ServiceError.badRequest('this operation can only be called from the root namespace');
  }
  if (info.unauthenticated) return true;
  if (!message.caller) throw ServiceError.forbidden();
  if (info.sudo && !message.capabilities.includes('sudo') && !message.capabilities.includes('root')) {
    throw ServiceError.forbidden('permission denied: this operation requires the sudo capability');
  }
  return false;
}
