/** Test support: a kv mount over real storage, driven through Backend.handle as the gateway would. */
import { randomUUID } from 'node:crypto';
import type { Capability, MountInfo, Operation } from '@svc/framework';
import { toErrorBody } from '@svc/http';
import { Barrier, createView, InmemPhysical, Keyring, type StorageView, type TransactionalStore } from '@svc/storage';
import { KvBackend } from './kv-backend';

export interface Outcome {
  status: number;
  data?: Record<string, unknown> | null;
  warnings?: string[];
  errors?: string[];
}

export interface CallOptions {
  capabilities?: Capability[];
  contentType?: string;
}

export function kvMount(version: '1' | '2'): MountInfo {
  const uuid = randomUUID();
  return {
    path: 'secret/',
    type: 'kv',
    uuid,
    accessor: `kv_${uuid.slice(0, 8)}`,
    namespace: '',
    description: '',
    config: { default_lease_ttl: 0, max_lease_ttl: 0 },
    options: { version },
    local: false,
    seal_wrap: false,
  };
}

/** A clock tests move by hand. */
export class ManualClock {
  time = new Date('2030-01-01T00:00:00.000Z');
  readonly now = (): Date => new Date(this.time);
  advance(seconds: number): void {
    this.time = new Date(this.time.getTime() + seconds * 1000);
  }
}

export class KvHarness {
  readonly backend: KvBackend;

  constructor(
    readonly mount: MountInfo,
    readonly storage: StorageView,
    readonly clock = new ManualClock(),
  ) {
    this.backend = new KvBackend(mount, { clock: clock.now });
  }

  /** A fresh mount over in-memory storage behind an unsealed barrier. */
  static inmem(version: '1' | '2'): KvHarness {
    return KvHarness.over(new InmemPhysical(), Keyring.generate(), kvMount(version));
  }

  static over(physical: TransactionalStore, keyring: Keyring, mount: MountInfo, clock?: ManualClock): KvHarness {
    const barrier = new Barrier(physical);
    barrier.unseal(keyring);
    return new KvHarness(mount, createView(barrier, `logical/${mount.uuid}/`), clock);
  }

  /** What sys/mounts/:path/tune does to the mount's options. */
  tune(version: string): void {
    this.mount.options = { ...this.mount.options, version };
  }

  /** One request; errors come back as the status and messages a client would see. */
  async call(operation: Exclude<Operation, 'help'>, path: string, data: Record<string, unknown> = {}, options: CallOptions = {}): Promise<Outcome> {
    try {
      const response = await this.backend.handle({
        requestId: randomUUID(),
        operation,
        path,
        data,
        headers: {},
        mount: this.mount,
        storage: this.storage,
        capabilities: new Set(options.capabilities ?? ['root']),
        contentType: options.contentType ?? (operation === 'patch' ? 'application/merge-patch+json' : 'application/json'),
      });
      if (response === undefined) return { status: 204 };
      return { status: response.status ?? 200, data: response.data, warnings: response.warnings };
    } catch (err) {
      const { status, errors } = toErrorBody(err);
      return { status, errors };
    }
  }

  read = (path: string, data?: Record<string, unknown>) => this.call('read', path, data);
  write = (path: string, data: Record<string, unknown>, options?: CallOptions) => this.call('update', path, data, options);
  patch = (path: string, data: Record<string, unknown>, options?: CallOptions) => this.call('patch', path, data, options);
  remove = (path: string) => this.call('delete', path);
  list = (path: string) => this.call('list', path);
}
