import type { StorageCall, StorageResult } from '@svc/engine-host';
import { ServiceError } from '@svc/api-contract';
import type { KeyValueStore, Transaction, TransactionalStore } from '@svc/storage';

type Success = Extract<StorageResult, { ok: true }>;

/** Sends one storage call to the host and waits for its result. */
export type StorageCaller = (call: StorageCall) => Promise<StorageResult>;

/** The key-value operations as host calls, outside (`tx` undefined) or inside a transaction. */
class RemoteOperations implements KeyValueStore {
  constructor(
    protected readonly call: (call: StorageCall) => Promise<Success>,
    protected readonly tx?: number,
  ) {}

  async get(key: string): Promise<Buffer | null> {
    const { value } = await this.call({ op: 'get', key, tx: this.tx });
    return typeof value === 'string' ? Buffer.from(value, 'base64') : null;
  }

  async put(key: string, value: Buffer): Promise<void> {
    await this.call({ op: 'put', key, value: value.toString('base64'), tx: this.tx });
  }

  async delete(key: string): Promise<void> {
    await this.call({ op: 'delete', key, tx: this.tx });
  }

  async list(prefix: string): Promise<string[]> {
    return (await this.call({ op: 'list', prefix, tx: this.tx })).keys ?? [];
  }
}

class RemoteTransaction extends RemoteOperations implements Transaction {
  async lock(key: string): Promise<void> {
    await this.call({ op: 'lock', key, tx: this.tx! });
  }
}

/**
 * A plugin's mount storage, held by the host: every call goes to the host, which checks the key
 * stays inside the mount and encrypts the value in its barrier. A transaction stays open on the
 * host until `fn` settles: committed when it resolves, rolled back when it throws.
 */
export class RemoteStore extends RemoteOperations implements TransactionalStore {
  constructor(caller: StorageCaller) {
    super(async (call) => {
      const result = await caller(call);
      if (!result.ok) throw new ServiceError(result.kind, result.errors);
      return result;
    });
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    const { tx } = await this.call({ op: 'begin' });
    if (tx === undefined) throw ServiceError.internal('plugin storage: the host opened no transaction');
    let result: T;
    try {
      result = await fn(new RemoteTransaction(this.call, tx));
    } catch (err) {
      await this.call({ op: 'rollback', tx });
      throw err;
    }
    await this.call({ op: 'commit', tx });
    return result;
  }
}
