import type { FieldSchema } from '@svc/framework';
import type { StorageView } from '@svc/storage';
import { generateVersion } from './key-material';
import type { KeyStore } from './key-store';
import type { MountSettings } from './settings';
import { checkKeyOptions, checkRotatable, hmacKeySize, newStoredKey, withRotation, type KeyOptions } from './stored-key';
import type { TransitKey } from './transit-key';
import type { WrappingKey } from './wrapping';

/** What the path groups of one mount share. */
export interface TransitServices {
  /** The mount's storage. */
  storage: StorageView;
  keys: KeyStore;
  settings: MountSettings;
  wrappingKey: WrappingKey;
}

export const NAME_FIELD: FieldSchema = { type: 'name', description: 'Name of the key.' };
/** What the `name` field type accepts, for names that arrive inside data (restore). */
export const KEY_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/** Generates version 1 and stores the key, unless another request created it meanwhile. */
export async function createKey(keys: KeyStore, storage: StorageView, name: string, options: KeyOptions): Promise<TransitKey> {
  const spec = checkKeyOptions(options);
  const first = await generateVersion(spec, hmacKeySize(options));
  return (await keys.create(storage, newStoredKey(name, options, first))).key;
}

/**
 * Adds a freshly generated version of the same type and size. Generation (slow for RSA) happens
 * before the storage transaction so the lock is held only for the write.
 */
export async function rotateKey(keys: KeyStore, storage: StorageView, name: string): Promise<TransitKey> {
  const current = await keys.require(storage, name);
  checkRotatable(current.stored);
  const version = await generateVersion(current.spec, hmacKeySize(current.stored));
  return keys.update(storage, name, (stored) => withRotation(stored, version));
}
