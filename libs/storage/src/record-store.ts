import { readStoredJson } from './json-records';
import type { StorageView } from './types';

/** Records of one kind under one storage prefix. */
export class RecordStore<T> {
  constructor(private readonly prefix: string) {}

  /** The storage key of a record, for a transaction that reads and writes it. */
  keyOf(name: string): string {
    return this.prefix + name;
  }

  get(storage: StorageView, name: string): Promise<T | null> {
    return storage.getJSON<T>(this.prefix + name);
  }

  /** The record as storage holds it, past any read cache (see readStoredJson). */
  getStored(storage: StorageView, name: string): Promise<T | null> {
    return readStoredJson<T>(storage, this.prefix + name);
  }

  async has(storage: StorageView, name: string): Promise<boolean> {
    return (await this.get(storage, name)) !== null;
  }

  put(storage: StorageView, name: string, record: T): Promise<void> {
    return storage.putJSON(this.prefix + name, record);
  }

  delete(storage: StorageView, name: string): Promise<void> {
    return storage.delete(this.prefix + name);
  }

  list(storage: StorageView): Promise<string[]> {
    return storage.list(this.prefix);
  }
}
