import { ServiceError } from '@svc/api-contract';
import { mergePatch, type JsonObject } from '../json';

/** Vault's limits on custom metadata. */
const MAX_KEYS = 64;
const MAX_KEY_LENGTH = 128;
const MAX_VALUE_LENGTH = 512;

function invalid(problem: string): ServiceError {
  return ServiceError.badRequest(`field "custom_metadata": ${problem}`);
}

/** Checks a complete custom metadata map; values are never echoed. */
function checked(map: JsonObject): Record<string, string> {
  const entries = Object.entries(map);
  if (entries.length > MAX_KEYS) throw invalid(`at most ${MAX_KEYS} keys are allowed, got ${entries.length}`);
  for (const [key, value] of entries) {
    if (typeof value !== 'string') throw invalid(`the value of key ${JSON.stringify(key)} is not a string`);
    if (key === '') throw invalid('keys must not be empty');
    if (key.length > MAX_KEY_LENGTH) {
      throw invalid(`key ${JSON.stringify(key)} is longer than ${MAX_KEY_LENGTH} characters`);
    }
    if (value.length > MAX_VALUE_LENGTH) {
      throw invalid(`the value of key ${JSON.stringify(key)} is longer than ${MAX_VALUE_LENGTH} characters`);
    }
  }
  return map as Record<string, string>;
}

/** A write replaces the whole map. */
export function replacedCustomMetadata(map: JsonObject): Record<string, string> {
  return checked(map);
}

/** A PATCH merges into the current map: `null` removes a key. */
export function patchedCustomMetadata(
  current: Record<string, string> | null,
  patch: JsonObject,
): Record<string, string> {
  return checked(mergePatch(current ?? {}, patch) as JsonObject);
}
