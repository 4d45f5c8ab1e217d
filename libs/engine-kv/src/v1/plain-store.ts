import type { StorageView } from '@svc/storage';

/** Version 1 keeps each secret as one JSON record at its path under this prefix (none of version 2's names). */
export const PLAIN_PREFIX = 'v1/';

export function plainStore(storage: StorageView): StorageView {
  return storage.sub(PLAIN_PREFIX);
}
