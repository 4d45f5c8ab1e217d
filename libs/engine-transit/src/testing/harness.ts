import { randomUUID } from 'node:crypto';
import type { Backend, Capability, MountInfo, Operation, Response } from '@svc/framework';
import { ServiceError } from '@svc/http';
import { MemoryLockManager } from '@svc/locks';
import { Barrier, InmemPhysical, Keyring, createView, type StorageView } from '@svc/storage';
import pino from 'pino';
import { transitBackendFactory } from '../backend';

/** Response data as tests read it: JSON whose shape each test asserts. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Data = Record<string, any>;

/** A transit mount over real (in-memory, barrier-encrypted) storage, driven through Backend.handle. */
export class TransitMount {
  constructor(
    readonly backend: Backend,
    readonly storage: StorageView,
    readonly mount: MountInfo,
  ) {}

  /** A mount with its own storage; `replicaOf` gives a second backend (replica) over the same storage. */
  static create(replicaOf?: TransitMount, locks = new MemoryLockManager()): TransitMount {
    const mount = replicaOf?.mount ?? mountInfo();
    const storage = replicaOf?.storage ?? newStorage(mount);
    const backend = transitBackendFactory(mount, { locks, logger: pino({ level: 'silent' }), passwordPolicy: async () => undefined });
    return new TransitMount(backend, storage, mount);
  }

  async request(
    operation: Operation,
    path: string,
    data: Record<string, unknown> = {},
    capabilities: Capability[] = ['root'],
  ): Promise<Response | undefined> {
    return this.backend.handle({
      requestId: randomUUID(),
      operation,
      path,
      data,
      headers: {},
      mount: this.mount,
      storage: this.storage,
      capabilities: new Set(capabilities),
    });
  }

  /** POST; returns `data` (the whole response is available through `request`). */
  async write(path: string, data: Record<string, unknown> = {}, capabilities?: Capability[]): Promise<Data> {
    return ((await this.request('update', path, data, capabilities))?.data ?? {}) as Data;
  }

  async read(path: string, data: Record<string, unknown> = {}): Promise<Data> {
    return ((await this.request('read', path, data))?.data ?? {}) as Data;
  }

  async periodic(): Promise<void> {
    await this.backend.periodic({
      requestId: randomUUID(),
      operation: 'update',
      path: '',
      data: {},
      headers: {},
      mount: this.mount,
      storage: this.storage,
      capabilities: new Set(['root']),
    });
  }
}

function mountInfo(): MountInfo {
  return {
    path: 'transit/',
    type: 'transit',
    uuid: randomUUID(),
    accessor: `transit_${randomUUID().slice(0, 8)}`,
    namespace: '',
    description: '',
    config: { default_lease_ttl: 0, max_lease_ttl: 0 },
    options: {},
    local: false,
    seal_wrap: false,
  };
}

function newStorage(mount: MountInfo): StorageView {
  const barrier = new Barrier(new InmemPhysical());
  barrier.unseal(Keyring.generate());
  return createView(barrier, `logical/${mount.uuid}/`);
}

/** The status and messages of a rejected request. */
export async function failure(promise: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ServiceError) return { status: err.status, message: err.errors.join('; ') };
    throw err;
  }
  throw new Error('expected the request to fail');
}

export const b64 = (text: string | Buffer): string => Buffer.from(text).toString('base64');
export const unb64 = (text: string): string => Buffer.from(text, 'base64').toString('utf8');
