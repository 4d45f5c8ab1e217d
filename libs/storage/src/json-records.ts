import type { KeyValueStore } from './types';

/** JSON records over any store, including a transaction (which has no getJSON/putJSON). */
export async function readJson<T>(store: KeyValueStore, key: string): Promise<T | null> {
  const value = await store.get(key);
  return value === null ? null : (JSON.parse(value.toString('utf8')) as T);
}

export async function writeJson(store: KeyValueStore, key: string, value: unknown): Promise<void> {
  await store.put(key, Buffer.from(JSON.stringify(value), 'utf8'));
}
