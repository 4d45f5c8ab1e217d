import { ServiceError } from '@svc/api-contract';
import { itemString, type BatchItem } from '../batch';
import { decodeBase64, parseVersioned } from '../encoding';
import type { CipherOptions } from '../encryption';

/** A base64 item field decoded; absent or empty gives undefined. */
export function itemBase64(value: unknown, name: string): Buffer | undefined {
  const text = itemString(value, name);
  return text ? decodeBase64(text, name) : undefined;
}

/** A base64 item field that must be present (it may encode nothing); `missing` is the error. */
export function requireItemBase64(value: unknown, name: string, missing: string): Buffer {
  const text = itemString(value, name);
  if (text === undefined) throw ServiceError.badRequest(missing);
  return decodeBase64(text, name);
}

/** context, nonce and associated_data of one item. */
export function cipherOptions(item: BatchItem): CipherOptions {
  return {
    context: itemBase64(item.context, 'context'),
    nonce: itemBase64(item.nonce, 'nonce'),
    associatedData: itemBase64(item.associated_data, 'associated_data'),
  };
}

/** The highest version named by the items' values (ciphertexts, signatures), for cache re-validation. */
export function highestVersion(items: readonly unknown[], field: string): number {
  let highest = 0;
  for (const item of items) {
    const value = typeof item === 'object' && item !== null ? (item as BatchItem)[field] : undefined;
    if (typeof value !== 'string') continue;
    try {
      highest = Math.max(highest, parseVersioned(value, field).version);
    } catch {
      // A malformed value is reported by its own item.
    }
  }
  return highest;
}
