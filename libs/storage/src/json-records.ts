import type { KeyValueStore, SharedDecoder, StorageView, TransactionalStore } from './types';

/** JSON records over any store, including a transaction (which has no getJSON/putJSON). */
export async function readJson<T>(store: KeyValueStore, key: string): Promise<T | null> {
  const value = await store.get(key);
  return value === null ? null : (JSON.parse(value.toString('utf8')) as T);
}

/**
 * A JSON record read from storage itself, never from a read cache (a transaction's reads bypass
 * it): for a decision under a lock that another process's write may have changed, such as whether
 * periodic work is still due.
 */
export function readStoredJson<T>(store: TransactionalStore, key: string): Promise<T | null> {
  return store.transaction((tx) => readJson<T>(tx, key));
}

/** A value as a JSON record's bytes. */
export function jsonBytes(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value), 'utf8');
}

export async function writeJson(store: KeyValueStore, key: string, value: unknown): Promise<void> {
  await store.put(key, jsonBytes(value));
}

/** A value no reader can change: what a shared decoding hands out (see SharedDecoder). */
export type Frozen<T> = T extends object ? { readonly [K in keyof T]: Frozen<T[K]> } : T;

function deepFreeze(value: unknown): unknown {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}

/** A stored value as text, shared by its readers. */
export const utf8Text: SharedDecoder<string> = (plaintext) => plaintext.toString('utf8');

const frozenJson: SharedDecoder<unknown> = (plaintext) => deepFreeze(JSON.parse(plaintext.toString('utf8')));

/** The decoder of readFrozenJson, for `getStamped`: a JSON record parsed and frozen. */
export function frozenJsonDecoder<T>(): SharedDecoder<Frozen<T>> {
  return frozenJson as SharedDecoder<Frozen<T>>;
}

/**
 * A JSON record read outside a transaction, parsed once while its stored value stays cached and
 * shared, frozen, by every reader: for hot read paths that only look at the record.
 */
export function readFrozenJson<T>(store: Pick<StorageView, 'getDecoded'>, key: string): Promise<Frozen<T> | null> {
  return store.getDecoded(key, frozenJsonDecoder<T>());
}
