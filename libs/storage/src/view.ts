import { checkRelativeDirectory, checkRelativeKey } from './keys';
import { writeIfUnchangedInTransaction } from './conditional-write';
import { ReadStamp, type ConditionalWrite, type KeyValueStore, type SharedDecoder, type StampedValue, type StorageView, type Transaction, type TransactionalStore } from './types';

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

  async getStamped<T>(key: string, decode: SharedDecoder<T>): Promise<StampedValue<T>> {
    const resolved = this.resolve(key);
    if (this.inner.getStamped) return this.inner.getStamped(resolved, decode);
    const value = await this.inner.get(resolved);
    return { value: value === null ? null : decode(value), stamp: new ReadStamp(value) };
  }

  peekDecoded<T>(key: string, decode: SharedDecoder<T>): T | null | undefined {
    return this.inner.peekDecoded?.(this.resolve(key), decode);
  }

  peekStamped<T>(key: string, decode: SharedDecoder<T>): StampedValue<T> | undefined {
    return this.inner.peekStamped?.(this.resolve(key), decode);
  }

  writeIfUnchanged({ locks, unchanged, writes }: ConditionalWrite): Promise<boolean> {
    const resolved: ConditionalWrite = {
      locks: locks.map((key) => this.resolve(key)),
      unchanged: new Map([...unchanged].map(([key, stamp]) => [this.resolve(key), stamp])),
      writes: new Map([...writes].map(([key, value]) => [this.resolve(key), value])),
    };
    return this.inner.writeIfUnchanged ? this.inner.writeIfUnchanged(resolved) : writeIfUnchangedInTransaction(this.inner, resolved);
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
