/**
 * The pieces every engine's unit tests need to drive a Backend as the engine host does: a mount,
 * real storage for it (in-memory, behind an unsealed barrier), an engine context and requests.
 */
import { randomUUID } from 'node:crypto';
import { mountStoragePrefix, type BackendFactory, type EngineContext } from '@svc/engine-host';
import type { AuthResponse, Backend, Capability, MountInfo, Operation, Request, Response } from '@svc/framework';
import { ServiceError, toErrorBody } from '@svc/api-contract';
import { MemoryLockManager } from '@svc/locks';
import { Barrier, createView, InmemPhysical, Keyring, type StorageView, type TransactionalStore } from '@svc/storage';
import pino from 'pino';

export interface TestMountOptions {
  /** Defaults to "<type>/". */
  path?: string;
  config?: Partial<MountInfo['config']>;
  options?: Record<string, string>;
}

/** A mount of `type` in the root namespace, as the mount table holds it, with a fresh uuid. */
export function testMount(type: string, { path = `${type}/`, config = {}, options = {} }: TestMountOptions = {}): MountInfo {
  const uuid = randomUUID();
  return {
    path,
    type,
    uuid,
    accessor: `${type}_${uuid.slice(0, 8)}`,
    namespace: '',
    description: '',
    config: { default_lease_ttl: 0, max_lease_ttl: 0, ...config },
    options,
    local: false,
    seal_wrap: false,
  };
}

/**
 * The mount's view of storage through its own unsealed barrier. Replicas of one mount pass the same
 * `physical` and `keyring`: each gets its own barrier over the shared data, as separate processes would.
 */
export function mountStorage(mount: MountInfo, physical: TransactionalStore = new InmemPhysical(), keyring: Keyring = Keyring.generate()): StorageView {
  return createView(unsealedBarrier({ physical, keyring }), mountStoragePrefix(mount));
}

/** A barrier unsealed with `keyring` (a fresh one by default) over `physical` (fresh in-memory storage by default). */
export function unsealedBarrier({ physical = new InmemPhysical(), keyring = Keyring.generate() }: { physical?: TransactionalStore; keyring?: Keyring } = {}): Barrier {
  const barrier = new Barrier(physical);
  barrier.unseal(keyring);
  return barrier;
}

export interface EngineContextOptions {
  /** The mount's storage (`mountStorage`). */
  storage: StorageView;
  locks?: EngineContext['locks'];
  logger?: EngineContext['logger'];
  /** Password policies (sys/policies/password) by name, as HCL; every namespace sees the same ones. */
  passwordPolicies?: Record<string, string>;
}

/** What the engine host gives a backend: in-process locks and a silent logger unless given others. */
export function engineContext({
  storage,
  locks = new MemoryLockManager(),
  logger = pino({ level: 'silent' }),
  passwordPolicies = {},
}: EngineContextOptions): EngineContext {
  return { storage, locks, logger, passwordPolicy: async (_namespace, name) => passwordPolicies[name] };
}

/** A request for `Backend.handle` as the engine host builds it, by default with root's capabilities. */
export function engineRequest(
  mount: MountInfo,
  operation: Operation,
  path: string,
  data: Record<string, unknown> = {},
  capabilities: Capability[] = ['root'],
): Request {
  return { requestId: randomUUID(), operation, path, data, mount, capabilities: new Set(capabilities) };
}

/** Response data as tests read it: JSON whose shape each test asserts. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ResponseData = Record<string, any>;

/** What a request adds to the defaults of `engineRequest` (a client address, capabilities). */
export type RequestExtras = Partial<Pick<Request, 'remoteAddress' | 'capabilities'>>;

/** One backend of any engine over its own mount and storage, driven as the engine host drives it. */
export class MountedBackend {
  constructor(
    readonly backend: Backend,
    readonly mount: MountInfo,
    readonly storage: StorageView,
  ) {}

  static create(factory: BackendFactory, type: string, options: { mount?: TestMountOptions; context?: Omit<EngineContextOptions, 'storage'> } = {}): MountedBackend {
    const mount = testMount(type, options.mount);
    const storage = mountStorage(mount);
    return new MountedBackend(factory(mount, engineContext({ ...options.context, storage })), mount, storage);
  }

  /** The same backend, mount and storage, asked through requests made in `namespace` (a path: "team/"). */
  inNamespace(namespace: string): MountedBackend {
    return new MountedBackend(this.backend, { ...this.mount, namespace }, this.storage);
  }

  request(operation: Operation, path: string, data: Record<string, unknown> = {}, extras: RequestExtras = {}): Promise<Response | undefined> {
    return this.backend.handle({ ...engineRequest(this.mount, operation, path, data), ...extras });
  }

  /** An update (POST); returns the response's data. */
  async write(path: string, data: Record<string, unknown> = {}, extras: RequestExtras = {}): Promise<ResponseData> {
    return ((await this.request('update', path, data, extras))?.data ?? {}) as ResponseData;
  }

  async read(path: string): Promise<ResponseData | undefined> {
    return (await this.request('read', path))?.data ?? undefined;
  }

  async list(path: string): Promise<string[]> {
    return ((await this.request('list', path))?.data?.keys as string[] | undefined) ?? [];
  }

  renewAuth(auth: AuthResponse): Promise<AuthResponse> {
    return this.backend.renewAuth(engineRequest(this.mount, 'update', ''), auth);
  }

  periodic(): Promise<void> {
    return this.backend.periodic();
  }
}

/** The status and messages of a refused request (fails the test when it was not refused). */
export async function refusal(promise: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ServiceError) return { status: toErrorBody(err).status, message: err.errors.join('; ') };
    throw err;
  }
  throw new Error('expected the request to be refused');
}
