/**
 * The pieces every engine's unit tests need to drive a Backend as the engine host does: a mount,
 * real storage for it (in-memory, behind an unsealed barrier), an engine context and requests.
 */
import { randomUUID } from 'node:crypto';
import { mountStoragePrefix, type EngineContext } from '@svc/engine-host';
import type { Capability, MountInfo, Operation, Request } from '@svc/framework';
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
  const barrier = new Barrier(physical);
  barrier.unseal(keyring);
  return createView(barrier, mountStoragePrefix(mount));
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
  return { requestId: randomUUID(), operation, path, data, headers: {}, mount, capabilities: new Set(capabilities) };
}
