import { randomUUID } from 'node:crypto';
import { BusUnavailableError, decodeJson, encodeJson, type Bus } from '@svc/bus';
import { GATEWAY, mountStoragePrefix, sameOptions, serviceSubject, type EngineHost, type EngineRegistry, type EngineReply, type EngineRequest, type OperationFields } from '@svc/engine-host';
import { LoginPaths, type MountInfo, type Operation, type Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { Timer } from '@svc/metrics';
import type { Barrier } from '@svc/storage';
import { ServiceWatch } from '../cluster/service-watch';
import { SYSTEM_MOUNT } from '../mounts/system-mount';
import type { Namespace, Route } from '../namespaces/namespace';
import type { NamespaceRegistry } from '../namespaces/registry';

const SERVICE_UNSEAL_RETRIES = 40;
const SERVICE_UNSEAL_RETRY_MS = 50;

/** The namespace a full path falls in, the path inside it, and the mount serving it. */
export type Routed = { namespace: Namespace; path: string; route?: Route };

/** What the request path asks of the router. */
export interface RequestRouter {
  /** The namespace a full path falls in, and the mount serving the rest of it. */
  route(fullPath: string): Routed;
  /** Whether a mount type runs in this process (its engine is given the token value and the headers). */
  isCoreEngine(mount: MountInfo): boolean;
  /**
   * Whether an operation is a login to an auth method (outside the ACL), by the method's own
   * declaration; a promise the first time a method that runs elsewhere is asked about.
   */
  isLogin(mount: MountInfo, path: string, operation: Operation): boolean | Promise<boolean>;
  /** Whether a sys/ operation is declared unauthenticated (outside the ACL; a token sent still names the caller). */
  isUnauthenticatedSystem(path: string, operation: Operation): boolean;
}

export interface Dispatcher {
  /** An operation on a mount, to the engine that owns the mount type (in process or over the bus). */
  dispatch(message: EngineRequest): Promise<EngineReply>;
  /** An operation on sys/, which is served in every seal state. */
  handleSystem(message: EngineRequest): Promise<EngineReply>;
}

/** Whatever serves operations on mounts: an engine host, a plugin host. */
export interface OperationHandler {
  handle(message: EngineRequest): Promise<EngineReply>;
}

export interface RouterDeps {
  namespaces: Pick<NamespaceRegistry, 'resolve' | 'get'>;
  engines: Pick<EngineRegistry, 'forMount'>;
  /** The engines that run in this process: the core's own mounts (sys/, token, identity, ...). */
  coreEngines: Pick<EngineHost, 'handle' | 'isUnauthenticated'>;
  /** External plugins this gateway runs for its mounts. */
  plugins: OperationHandler;
  /** Engine services running in this process (all-in-one): reached without serialization. */
  localServices: ReadonlyMap<string, OperationHandler>;
  barrier: Pick<Barrier, 'canWrite' | 'sealed'>;
  bus: Bus;
  subjectPrefix?: string;
  /** How long an engine service may take to answer. */
  requestTimeoutMs: number;
  /** Round trips to engine services over the bus. */
  busRequests: Timer;
}

/**
 * Where an operation goes: the namespace and mount of a path, and the engine that owns the mount's
 * type, in this process, in an engine service over the bus, or in a plugin process.
 */
export class Router implements RequestRouter, Dispatcher {
  private readonly services: ServiceWatch;
  /**
   * The login declarations of mounts whose backends run elsewhere (an engine service, a plugin
   * process), by mount, with the options they were fetched for (a tune builds the backend anew),
   * fetched on first use.
   */
  private readonly remoteLogins = new Map<string, { options: MountInfo['options']; logins: LoginPaths | Promise<LoginPaths> }>();

  constructor(private readonly deps: RouterDeps) {
    this.services = new ServiceWatch(deps.bus, deps.subjectPrefix);
  }

  stop(): void {
    this.services.stop();
  }

  /** The namespace a full path falls in, and the mount serving the rest of it. */
  route(fullPath: string): Routed {
    const { namespace, path } = this.deps.namespaces.resolve(fullPath);
    return { namespace, path, route: namespace.route(path) };
  }

  /** The namespace a request runs in (its mount's namespace). */
  namespaceOf(req: { mount: MountInfo }): Namespace {
    const namespace = this.deps.namespaces.get(req.mount.namespace);
    if (!namespace) throw ServiceError.notFound(`namespace "${req.mount.namespace}" does not exist`);
    return namespace;
  }

  /** A mount of this cluster by its uuid (the system mount of the namespace for sys/). */
  mountByUuid(namespacePath: string, uuid: string): MountInfo | undefined {
    const namespace = this.deps.namespaces.get(namespacePath);
    if (!namespace) return undefined;
    if (uuid === SYSTEM_MOUNT.uuid) return { ...SYSTEM_MOUNT, namespace: namespace.path };
    return namespace.allMounts().find(({ mount }) => mount.uuid === uuid)?.mount;
  }

  /** Sends an operation to the engine that owns the mount type. */
  dispatch(message: EngineRequest): Promise<EngineReply> {
    if (message.mount.external) return this.deps.plugins.handle(message);
    const engine = this.deps.engines.forMount(message.mount);
    if (!engine) return Promise.reject(ServiceError.badRequest(`unsupported mount type "${message.mount.type}"`));
    if (engine.runsIn === GATEWAY) return this.deps.coreEngines.handle(message);
    return this.deps.localServices.get(engine.runsIn)?.handle(message) ?? this.dispatchRemote(engine.runsIn, message);
  }

  /** sys/ requests, which are served in every seal state (the pipeline decides which). */
  handleSystem(message: EngineRequest): Promise<EngineReply> {
    return this.deps.coreEngines.handle(message);
  }

  /** Whether a mount type runs in this process (core engines get the caller's token value). */
  isCoreEngine(mount: MountInfo): boolean {
    return this.deps.engines.forMount(mount)?.runsIn === GATEWAY;
  }

  /**
   * Whether a request is a login to an auth method: it is outside the ACL, and a token sent with it
   * is ignored, as Vault ignores one on its unauthenticated paths. The method's declaration says,
   * wherever it runs: a method of another process is asked for its declaration once.
   */
  isLogin(mount: MountInfo, path: string, operation: Operation): boolean | Promise<boolean> {
    if (operation === 'help') return false;
    if (this.isCoreEngine(mount)) return this.deps.coreEngines.isUnauthenticated(mount, path, operation);
    const cached = this.remoteLogins.get(mount.uuid);
    const known = cached && sameOptions(cached.options, mount.options) ? cached.logins : this.fetchLogins(mount);
    return known instanceof LoginPaths ? known.isLogin(path, operation) : known.then((logins) => logins.isLogin(path, operation));
  }

  private fetchLogins(mount: MountInfo): Promise<LoginPaths> {
    const { uuid, options } = mount;
    const fetched = this.dispatch({ kind: 'logins', requestId: randomUUID(), mount, path: '', operation: 'read', data: {}, capabilities: [] }).then((reply) => {
      if (!reply.ok) throw new ServiceError(reply.kind, reply.errors);
      const logins = new LoginPaths(reply.logins ?? []);
      if (this.remoteLogins.get(uuid)?.logins === fetched) this.remoteLogins.set(uuid, { options, logins });
      return logins;
    });
    this.remoteLogins.set(uuid, { options, logins: fetched });
    // A failure (the service unreachable) is that request's answer; the next one asks again.
    fetched.catch(() => {
      if (this.remoteLogins.get(uuid)?.logins === fetched) this.remoteLogins.delete(uuid);
    });
    return fetched;
  }

  isUnauthenticatedSystem(path: string, operation: Operation): boolean {
    return operation !== 'help' && this.deps.coreEngines.isUnauthenticated(SYSTEM_MOUNT, path, operation);
  }

  /** The identity fields of a message derived from another request (same caller and id). */
  baseMessage(req: Request): Omit<OperationFields, 'mount' | 'path' | 'operation'> {
    return {
      requestId: req.requestId,
      data: {},
      caller: req.caller,
      capabilities: [...req.capabilities],
    };
  }

  private async dispatchRemote(service: string, request: EngineRequest): Promise<EngineReply> {
    // The service's barrier has no replication state: it is told when a mount is read-only here.
    const message = this.deps.barrier.canWrite(mountStoragePrefix(request.mount)) ? request : { ...request, replicatedReadOnly: true };
    for (let attempt = 0; ; attempt++) {
      const reply = await this.requestService(service, message);
      // Right after an unseal, services are still fetching the keyring: give them a moment.
      if (reply.ok || reply.kind !== 'sealed' || attempt >= SERVICE_UNSEAL_RETRIES || this.deps.barrier.sealed) return reply;
      await new Promise((resolve) => setTimeout(resolve, SERVICE_UNSEAL_RETRY_MS));
    }
  }

  private async requestService(service: string, message: EngineRequest): Promise<EngineReply> {
    const started = performance.now();
    try {
      // The request id travels inside the message; no bus headers to encode on the hot path.
      const subject = serviceSubject(service, this.deps.subjectPrefix);
      const reply = await this.services.track(service, this.deps.bus.request(subject, encodeJson(message), { timeoutMs: this.deps.requestTimeoutMs }));
      const decoded = decodeJson<EngineReply>(reply.payload);
      this.deps.busRequests.series(service).record(started, false);
      return decoded;
    } catch (err) {
      this.deps.busRequests.series(service).record(started, true);
      if (err instanceof BusUnavailableError) {
        throw ServiceError.unavailable(`service "${service}" is unavailable (${err.reason})`);
      }
      throw err;
    }
  }
}
