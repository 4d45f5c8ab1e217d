export { frozenJsonDecoder, jsonBytes, readFrozenJson, readJson, utf8Text, writeJson, type Frozen } from '@svc/storage';

export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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
