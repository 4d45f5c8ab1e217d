import { checkRelativeDirectory, checkRelativeKey } from './keys';
import type { KeyValueStore, SharedDecoder, StorageView, Transaction, TransactionalStore } from './types';

/** Maps keys relative to `prefix` onto an inner store. Listings of a directory are already
 * relative (immediate child names), so they pass through unchanged. */
class PrefixedOperations<Inner extends KeyValueStore> implements KeyValueStore {
  constructor(
    protected readonly inner: Inner,
    readonly prefix: string,
  ) {}

  async get(key: string): Promise<Buffer | null> {
    return this.inner.get(this.resolve(key));
  }

  async put(key: string, value: Buffer): Promise<void> {
    return this.inner.put(this.resolve(key), value);
  }

  async delete(key: string): Promise<void> {
    return this.inner.delete(this.resolve(key));
  }

  async list(prefix: string): Promise<string[]> {
    return this.inner.list(this.prefix + checkRelativeDirectory(prefix));
  }

  protected resolve(key: string): string {
    return this.prefix + checkRelativeKey(key);
  }
}

class PrefixedTransaction extends PrefixedOperations<Transaction> implements Transaction {
  async lock(key: string): Promise<void> {
    return this.inner.lock(this.resolve(key));
  }
}

class View extends PrefixedOperations<TransactionalStore> implements StorageView {
  sub(prefix: string): StorageView {
    return new View(this.inner, this.prefix + checkRelativeDirectory(prefix));
  }

  async getJSON<T>(key: string): Promise<T | null> {
    const value = await this.get(key);
    return value === null ? null : (JSON.parse(value.toString('utf8')) as T);
  }

  async putJSON(key: string, value: unknown): Promise<void> {
    const json = JSON.stringify(value);
    if (json === undefined) throw new TypeError(`putJSON: the value for ${JSON.stringify(key)} has no JSON form`);
    return this.put(key, Buffer.from(json, 'utf8'));
  }

  getDecoded<T>(key: string, decode: SharedDecoder<T>): Promise<T | null> {
    const resolved = this.resolve(key);
    if (this.inner.getDecoded) return this.inner.getDecoded(resolved, decode);
    return this.inner.get(resolved).then((value) => (value === null ? null : decode(value)));
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.inner.transaction((tx) => fn(new PrefixedTransaction(tx, this.prefix)));
  }
}

/**
 * A view of `store` (normally the barrier) that sees only keys under `prefix` ('' or ending in
 * '/'). Keys and prefixes given to the view must not start with '/', contain empty or '..'
 * segments: a request path can never reach outside its mount's prefix.
 */
export function createView(store: TransactionalStore, prefix: string): StorageView {
  return new View(store, checkRelativeDirectory(prefix));
}
