import type { KeyValueStore } from '@svc/storage';

export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** JSON records over any store, including a transaction (which has no getJSON/putJSON). */
export async function readJson<T>(store: KeyValueStore, key: string): Promise<T | null> {
  const value = await store.get(key);
  return value === null ? null : (JSON.parse(value.toString('utf8')) as T);
}

export async function writeJson(store: KeyValueStore, key: string, value: unknown): Promise<void> {
  await store.put(key, Buffer.from(JSON.stringify(value), 'utf8'));
}

/**
 * JSON merge patch (RFC 7396): objects merge key by key, `null` removes a key, anything else
 * (arrays included) replaces the target's value.
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isJsonObject(patch)) return patch;
  // A Map and Object.fromEntries keep a "__proto__" key an ordinary key instead of a prototype.
  const merged = new Map(Object.entries(isJsonObject(target) ? target : {}));
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) merged.delete(name);
    else merged.set(name, mergePatch(merged.get(name), value));
  }
  return Object.fromEntries(merged);
}
