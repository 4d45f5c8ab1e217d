/** Test support: a kv mount over real storage, driven through Backend.handle as the gateway would. */
import { responseData, type Backend, type Capability, type MountInfo, type Operation } from '@svc/framework';
import { toErrorBody } from '@svc/api-contract';
import type { Keyring, StorageView, TransactionalStore } from '@svc/storage';
import { engineRequest, mountStorage, testMount } from '@svc/testing';
import { createKvBackend } from '../kv-backend';

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
  return testMount('kv', { path: 'secret/', options: { version } });
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
  /** Built and initialized on the first call after creation or a change of the mount's options, as the engine host does. */
  private started?: { options: string; backend: Promise<Backend> };

  constructor(
    readonly mount: MountInfo,
    readonly storage: StorageView,
    readonly clock = new ManualClock(),
  ) {}

  /** A fresh mount over in-memory storage behind an unsealed barrier. */
  static inmem(version: '1' | '2'): KvHarness {
    const mount = kvMount(version);
    return new KvHarness(mount, mountStorage(mount));
  }

  /** A replica of `mount` over shared physical storage, unsealed with the shared keyring. */
  static over(physical: TransactionalStore, keyring: Keyring, mount: MountInfo, clock?: ManualClock): KvHarness {
    return new KvHarness(mount, mountStorage(mount, physical, keyring), clock);
  }

  /** What sys/mounts/:path/tune does to the mount's options; the next call builds the backend anew. */
  tune(version: string): void {
    this.mount.options = { ...this.mount.options, version };
  }

  /** The mount's backend; one that failed to build or initialize is built again by the next call. */
  backend(): Promise<Backend> {
    const options = JSON.stringify(this.mount.options);
    if (this.started?.options !== options) {
      const started = {
        options,
        backend: (async () => {
          const backend = createKvBackend(this.mount, this.storage, this.clock.now);
          await backend.initialize();
          return backend;
        })(),
      };
      this.started = started;
      started.backend.catch(() => {
        if (this.started === started) this.started = undefined;
      });
    }
    return this.started.backend;
  }

  /** One request; errors come back as the status and messages a client would see. */
  async call(operation: Exclude<Operation, 'help'>, path: string, data: Record<string, unknown> = {}, options: CallOptions = {}): Promise<Outcome> {
    try {
      const response = await (await this.backend()).handle({
        ...engineRequest(this.mount, operation, path, data, options.capabilities),
        contentType: options.contentType ?? (operation === 'patch' ? 'application/merge-patch+json' : 'application/json'),
      });
      if (response === undefined) return { status: 204 };
      return { status: response.status ?? 200, data: responseData(response), warnings: response.warnings };
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
