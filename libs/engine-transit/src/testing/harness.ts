import { responseData as dataOf, type Backend, type Capability, type MountInfo, type Operation, type Response } from '@svc/framework';
import type { LockManager } from '@svc/locks';
import type { StorageView } from '@svc/storage';
import { engineContext, engineRequest, mountStorage, testMount } from '@svc/testing';
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
  static create(replicaOf?: TransitMount, locks?: LockManager): TransitMount {
    const mount = replicaOf?.mount ?? testMount('transit');
    const storage = replicaOf?.storage ?? mountStorage(mount);
    return new TransitMount(transitBackendFactory(mount, engineContext({ storage, locks })), storage, mount);
  }

  async request(operation: Operation, path: string, data?: Record<string, unknown>, capabilities?: Capability[]): Promise<Response | undefined> {
    return this.backend.handle(engineRequest(this.mount, operation, path, data, capabilities));
  }

  /** POST; returns `data` (the whole response is available through `request`). */
  async write(path: string, data: Record<string, unknown> = {}, capabilities?: Capability[]): Promise<Data> {
    return responseData(await this.request('update', path, data, capabilities));
  }

  async read(path: string, data: Record<string, unknown> = {}): Promise<Data> {
    return responseData(await this.request('read', path, data));
  }

  async periodic(): Promise<void> {
    await this.backend.periodic();
  }
}

/** A response's data as a client reads it, whether the engine gave an object or JSON text. */
export function responseData(response: Response | undefined): Data {
  return (dataOf(response) ?? {}) as Data;
}

/** The status and messages of a rejected request. */
export { refusal as failure } from '@svc/testing';

export const b64 = (text: string | Buffer): string => Buffer.from(text).toString('base64');
export const unb64 = (text: string): string => Buffer.from(text, 'base64').toString('utf8');
