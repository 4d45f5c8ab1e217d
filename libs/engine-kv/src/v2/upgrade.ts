import type { KeyValueStore, StorageView } from '@svc/storage';
import { readJson, writeJson, type JsonObject } from '../json';
import { PLAIN_PREFIX } from '../v1/plain-store';
import { KvRecords } from './records';
import { addVersion, emptyMetadata } from './versions';

/** Present once a mount's version 1 data has been moved to the version 2 layout. */
const UPGRADE_KEY = 'upgrade';

export async function isUpgraded(storage: StorageView): Promise<boolean> {
  return (await storage.get(UPGRADE_KEY)) !== null;
}

/** Every key under `directory` of a version 1 store, depth first. */
async function* plainKeys(store: KeyValueStore, directory: string): AsyncGenerator<string> {
  for (const name of await store.list(directory)) {
    if (name.endsWith('/')) yield* plainKeys(store, directory + name);
    else yield directory + name;
  }
}

/**
 * Moves every version 1 secret to the version 2 layout as version 1 of its key, once per mount.
 * One transaction under the upgrade lock: replicas racing to upgrade wait for the first one and
 * then find it done, and a failure leaves the version 1 data untouched.
 */
export async function upgradeToVersioned(storage: StorageView, now: Date): Promise<void> {
  if (await isUpgraded(storage)) return;
  await storage.transaction(async (tx) => {
    await tx.lock(UPGRADE_KEY);
    if ((await tx.get(UPGRADE_KEY)) !== null) return;
    const records = new KvRecords(tx);
    const config = await records.config();
    for await (const key of plainKeys(tx, PLAIN_PREFIX)) {
      const path = key.slice(PLAIN_PREFIX.length);
      const metadata = emptyMetadata(now);
      const version = addVersion(metadata, config, now);
      await records.putVersion(path, version, (await readJson<JsonObject>(tx, key)) ?? {});
      await records.putMetadata(path, metadata);
      await tx.delete(key);
    }
    await writeJson(tx, UPGRADE_KEY, { upgraded_time: now.toISOString() });
  });
}
