import type { Backend, Capability, MountInfo, PathOperation, Request } from '@svc/framework';
import type { Logger } from 'pino';
import type { Bus, Subscription } from '@svc/bus';
import type { LockManager } from '@svc/locks';
import { decodeJson, encodeJson } from '@svc/bus';
import { describeRequestError, errorOf, ServiceError } from '@svc/http';
import { createView, type Barrier, type StorageView } from '@svc/storage';
import { mountRemovedSubject, servicePresenceSubject, serviceQueue, serviceSubject, type EngineReply, type EngineRequest } from './protocol';

/** What a backend may use besides its mount's storage: locks for one-replica jobs, a logger. */
export interface EngineContext {
  locks: LockManager;
  logger: Logger;
  /** The text of a password policy (sys/policies/password) of a namespace, if it exists. */
  passwordPolicy(namespace: string, name: string): Promise<string | undefined>;
}

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

export type BackendFactory = (mount: MountInfo, context: EngineContext) => Backend;

/** Where a mount's data lives inside the barrier: a mount sees nothing else. */
export function mountStoragePrefix(mount: Pick<MountInfo, 'uuid'>): string {
  return `logical/${mount.uuid}/`;
}

/**
 * Runs the backends of one service (or the gateway's core engines) for every mount of their
 * types. Backends are created once per mount and kept; storage views are scoped to the mount.
 */
export class EngineHost {
  private readonly mounts = new Map<string, { backend: Backend; storage: StorageView }>();

  private readonly context: EngineContext;

  constructor(
    readonly service: string,
    private readonly factories: Record<string, BackendFactory>,
    private readonly barrier: Barrier,
    services: Pick<EngineContext, 'locks' | 'logger'>,
    /** The gateway's own host serves sys/ while sealed; a service has nothing to offer then. */
    private readonly requireUnsealed = true,
  ) {
    const shared = createView(barrier, '');
    this.context = {
      ...services,
      passwordPolicy: async (namespace, name) => (await shared.get(passwordPolicyKey(namespace, name)))?.toString('utf8'),
    };
  }

  types(): string[] {
    return Object.keys(this.factories);
  }

  async handle(message: EngineRequest): Promise<EngineReply> {
    try {
      if (this.requireUnsealed && this.barrier.sealed) throw ServiceError.sealed(`service ${this.service} is sealed`);
      const { backend, storage } = this.forMount(message.mount);
      const open = message.kind === 'operation' && enforceOperationFlags(backend, message);
      const req: Request = {
        requestId: message.requestId,
        operation: message.operation,
        path: message.path,
        data: message.data,
        headers: message.headers,
        mount: message.mount,
        storage,
        caller: message.caller,
        // Unauthenticated operations (init, login) are outside the ACL, as in Vault.
        capabilities: open ? UNRESTRICTED : capabilitySet(message.capabilities),
        remoteAddress: message.remoteAddress,
        contentType: message.contentType,
      };
      switch (message.kind) {
        case 'operation':
          return { ok: true, response: await backend.handle(req) };
        case 'help':
          return { ok: true, help: backend.help(message.path) };
        case 'renew':
          return { ok: true, response: await backend.renewSecret(req, message.secretType, message.internalData) };
        case 'renew-auth':
          return { ok: true, response: { auth: await backend.renewAuth(req, message.auth) } };
        case 'periodic':
          await backend.periodic(req);
          return { ok: true };
        case 'revoke':
          await backend.revokeSecret(req, message.secretType, message.internalData);
          return { ok: true };
      }
    } catch (err) {
      // The caller sees only "internal error": the log is where an operator finds the cause.
      if (!(err instanceof ServiceError)) this.context.logger.error({ request_id: message.requestId, err: describeRequestError(err) }, 'internal error');
      return { ok: false, ...errorOf(err) };
    }
  }

  /** Whether an operation of a mount's backend is unauthenticated (a login), for the gateway to know before it checks a token. */
  isUnauthenticated(mount: MountInfo, path: string, operation: PathOperation): boolean {
    return this.forMount(mount).backend.operationInfo(path, operation)?.unauthenticated === true;
  }

  /** Drops (and closes) the backend of a mount that was disabled. */
  forget(uuid: string): void {
    const entry = this.mounts.get(uuid);
    this.mounts.delete(uuid);
    if (entry) void closeBackend(entry.backend);
  }

  /** Closes every backend (connection pools, timers) when the process stops. */
  async closeAll(): Promise<void> {
    const backends = [...this.mounts.values()].map((entry) => entry.backend);
    this.mounts.clear();
    await Promise.all(backends.map(closeBackend));
  }

  /**
   * Serves this host's subject on the bus, load-balanced across replicas of the service, and its
   * presence subject, which any live replica answers with nothing.
   */
  serve(bus: Bus, subjectPrefix?: string): Subscription {
    const requests = bus.serve(serviceSubject(this.service, subjectPrefix), serviceQueue(this.service, subjectPrefix), async (msg) => ({
      payload: encodeJson(await this.handle(decodeJson<EngineRequest>(msg.payload))),
      headers: {},
    }));
    const presence = bus.serve(servicePresenceSubject(this.service, subjectPrefix), serviceQueue(this.service, subjectPrefix), async () => ({ payload: new Uint8Array(), headers: {} }));
    const removals = bus.subscribe(mountRemovedSubject(subjectPrefix), (msg) => this.forget(decodeJson<{ uuid: string }>(msg.payload).uuid));
    return {
      unsubscribe: () => {
        requests.unsubscribe();
        presence.unsubscribe();
        removals.unsubscribe();
      },
    };
  }

  /** Registers a backend that is not built per mount (the gateway's sys/ backend). */
  register(mount: MountInfo, backend: Backend): void {
    this.mounts.set(mount.uuid, { backend, storage: createView(this.barrier, mountStoragePrefix(mount)) });
  }

  private forMount(mount: MountInfo): { backend: Backend; storage: StorageView } {
    let entry = this.mounts.get(mount.uuid);
    if (!entry) {
      const factory = this.factories[mount.type];
      if (!factory) throw ServiceError.badRequest(`service ${this.service} does not serve mount type "${mount.type}"`);
      entry = { backend: factory(mount, this.context), storage: createView(this.barrier, mountStoragePrefix(mount)) };
      this.mounts.set(mount.uuid, entry);
    }
    return entry;
  }
}

const UNRESTRICTED: ReadonlySet<Capability> = new Set(['root']);

/** Backends that hold resources (pools, timers) expose `close`; others have nothing to release. */
async function closeBackend(backend: Backend): Promise<void> {
  await (backend as { close?: () => Promise<void> }).close?.().catch(() => undefined);
}

/**
 * Sudo, root-namespace and unauthenticated markings of the operation being called. Returns
 * whether the operation is unauthenticated (and so not subject to capabilities).
 */
function enforceOperationFlags(backend: Backend, message: EngineRequest): boolean {
  const info = backend.operationInfo(message.path, message.operation as PathOperation);
  if (!info) return false; // the backend answers 404 or 405 itself
  if (info.unauthenticated) return true;
  if (!message.caller) throw ServiceError.forbidden();
  if (info.sudo && !message.capabilities.includes('sudo') && !message.capabilities.includes('root')) {
    throw ServiceError.forbidden('permission denied: this operation requires the sudo capability');
  }
  if (info.rootNamespace && message.mount.namespace !== '') {
    throw ServiceError.badRequest('this operation can only be called from the root namespace');
  }
  return false;
}
