import type { ChangeFeed, ConditionalWrite, Physical, PhysicalTransaction, StoredEntry, StoreSnapshot, WriteAheadLog } from './types';

/** A physical store in front of another, to which it hands every operation it does not change itself. */
export abstract class ForwardingPhysical implements Physical {
  constructor(protected readonly inner: Physical) {}

  get kind(): Physical['kind'] {
    return this.inner.kind;
  }

  get changes(): ChangeFeed | undefined {
    return this.inner.changes;
  }

  get log(): WriteAheadLog {
    return this.inner.log;
  }

  open(): Promise<void> {
    return this.inner.open();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  get(key: string): Promise<Buffer | null> {
    return this.inner.get(key);
  }

  put(key: string, value: Buffer): Promise<void> {
    return this.inner.put(key, value);
  }

  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }

  list(prefix: string): Promise<string[]> {
    return this.inner.list(prefix);
  }

  transaction<T>(fn: (tx: PhysicalTransaction) => Promise<T>): Promise<T> {
    return this.inner.transaction(fn);
  }

  writeIfUnchanged(write: ConditionalWrite): Promise<boolean> {
    return this.inner.writeIfUnchanged(write);
  }

  scan<T>(consume: (entries: AsyncIterable<StoredEntry>) => Promise<T>): Promise<T> {
    return this.inner.scan(consume);
  }

  snapshot<T>(consume: (snapshot: StoreSnapshot) => Promise<T>): Promise<T> {
    return this.inner.snapshot(consume);
  }

  replaceAll(entries: AsyncIterable<StoredEntry>, keep: ReadonlySet<string>): Promise<void> {
    return this.inner.replaceAll(entries, keep);
  }
}
