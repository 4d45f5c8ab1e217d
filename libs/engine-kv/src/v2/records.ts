import { hash } from 'node:crypto';
import { ReadStamp, type KeyValueStore, type SharedDecoder, type StampedValue, type StorageView } from '@svc/storage';
import { queueKey, recordSecretChange, unsyncedSecret } from '@svc/sync-model';
import { frozenJsonDecoder, jsonBytes, readFrozenJson, readJson, utf8Text, writeJson, type Frozen, type JsonObject } from '../json';
import type { EngineConfig, KeyMetadata, VersionState } from './shapes';
import { isLive } from './versions';

/**
 * Storage layout of a version 2 mount:
 *   metadata/<secret path>          one metadata record per key; a directory of keys is one listing
 *   versions/<sha256(path)>/<n>     one record per version holding that version's data
 *   config                          the mount's settings
 * Version records live under a hash of the path so a 50-segment path costs no deeper keys there.
 */
const METADATA_PREFIX = 'metadata/';
const CONFIG_KEY = 'config';

export type { EngineConfig, KeyMetadata, VersionState };

export const DEFAULT_CONFIG: EngineConfig = Object.freeze({ max_versions: 0, cas_required: false, delete_version_after: 0 });

/** The mount's settings: those stored, over the defaults. */
function withDefaults(stored: Partial<EngineConfig> | null): EngineConfig {
  return { ...DEFAULT_CONFIG, ...stored };
}

/** `withDefaults` of the stored settings, merged once per stored value and shared. */
const sharedConfig: SharedDecoder<Frozen<EngineConfig>> = (plaintext) => Object.freeze(withDefaults(JSON.parse(plaintext.toString('utf8')) as Partial<EngineConfig>));

/** Hashed paths of recently used keys: hashing was a tenth of a cached read's own work. */
const versionDirectories = new Map<string, string>();
const MAX_REMEMBERED_DIRECTORIES = 10_000;

function versionKey(path: string, version: number): string {
  let directory = versionDirectories.get(path);
  if (directory === undefined) {
    directory = `versions/${hash('sha256', path, 'hex')}/`;
    if (versionDirectories.size >= MAX_REMEMBERED_DIRECTORIES) versionDirectories.clear();
    versionDirectories.set(path, directory);
  }
  return directory + version;
}

/**
 * Reads outside a transaction for answers that only look at the records: the metadata frozen and
 * the version's data as its stored JSON text, both shared with every other reader of the same
 * stored value, so a hot key is neither parsed nor serialized again on each read. The `cached`
 * forms answer from the read cache alone, at once (undefined when it holds nothing of the key).
 */
export const sharedReads = {
  metadata: (view: StorageView, path: string): Promise<Frozen<KeyMetadata> | null> => readFrozenJson<KeyMetadata>(view, METADATA_PREFIX + path),
  cachedMetadata: (view: StorageView, path: string): Frozen<KeyMetadata> | null | undefined => view.peekDecoded(METADATA_PREFIX + path, frozenJsonDecoder<KeyMetadata>()),
  versionText: (view: StorageView, path: string, version: number): Promise<string | null> => view.getDecoded(versionKey(path, version), utf8Text),
  cachedVersionText: (view: StorageView, path: string, version: number): string | null | undefined => view.peekDecoded(versionKey(path, version), utf8Text),
  config: (view: StorageView): Promise<Frozen<EngineConfig>> => view.getDecoded(CONFIG_KEY, sharedConfig).then((config) => config ?? DEFAULT_CONFIG),
};

/** A key's metadata, frozen, with the stamp a conditional write of the key compares (writeKeyIfUnchanged). */
export function stampedMetadata(view: StorageView, path: string): Promise<StampedValue<Frozen<KeyMetadata>>> {
  return view.getStamped(METADATA_PREFIX + path, frozenJsonDecoder<KeyMetadata>());
}

/** `stampedMetadata` from the read cache alone; undefined when the cache holds nothing of the key. */
export function cachedStampedMetadata(view: StorageView, path: string): StampedValue<Frozen<KeyMetadata>> | undefined {
  return view.peekStamped(METADATA_PREFIX + path, frozenJsonDecoder<KeyMetadata>());
}

/** A key's next state: its metadata, the new version's data, and the versions it prunes. */
export interface KeyChange {
  metadata: KeyMetadata;
  version: number;
  data: JsonObject;
  pruned: number[];
}

/**
 * Writes `change` in one step, under the locks a transaction of the key takes (updateKey), if the
 * key's metadata is still what `stamp` read and the secret owes the sync queue nothing; answers
 * false otherwise, and the caller takes the transaction.
 */
export function writeKeyIfUnchanged(view: StorageView, path: string, stamp: ReadStamp, { metadata, version, data, pruned }: KeyChange): Promise<boolean> {
  const sync = unsyncedSecret(path);
  const metadataKey = METADATA_PREFIX + path;
  return view.writeIfUnchanged({
    locks: [metadataKey, sync.lock],
    unchanged: new Map([[metadataKey, stamp], ...sync.absent.map((key): [string, ReadStamp] => [key, ReadStamp.ABSENT])]),
    writes: new Map<string, Buffer | null>([
      [versionKey(path, version), jsonBytes(data)],
      ...pruned.map((old): [string, null] => [versionKey(path, old), null]),
      [metadataKey, jsonBytes(metadata)],
    ]),
  });
}

/** Typed access to a mount's records, over its view or over one of its transactions. */
export class KvRecords {
  constructor(private readonly store: KeyValueStore) {}

  metadata(path: string): Promise<KeyMetadata | null> {
    return readJson<KeyMetadata>(this.store, METADATA_PREFIX + path);
  }

  putMetadata(path: string, metadata: KeyMetadata): Promise<void> {
    return writeJson(this.store, METADATA_PREFIX + path, metadata);
  }

  /** Removes the key and the data of every version it still holds. */
  async deleteKey(path: string, metadata: KeyMetadata): Promise<void> {
    for (const version of Object.keys(metadata.versions)) await this.deleteVersion(path, Number(version));
    await this.store.delete(METADATA_PREFIX + path);
  }

  version(path: string, version: number): Promise<JsonObject | null> {
    return readJson<JsonObject>(this.store, versionKey(path, version));
  }

  putVersion(path: string, version: number, data: JsonObject): Promise<void> {
    return writeJson(this.store, versionKey(path, version), data);
  }

  deleteVersion(path: string, version: number): Promise<void> {
    return this.store.delete(versionKey(path, version));
  }

  /** Names of keys ('name') and sub-directories ('name/') directly inside `directory`. */
  list(directory: string): Promise<string[]> {
    return this.store.list(METADATA_PREFIX + directory);
  }

  /** The data of the key's latest version, null when the key has none or it is deleted or destroyed. */
  async current(path: string, now: Date): Promise<JsonObject | null> {
    const metadata = await this.metadata(path);
    const latest = metadata?.versions[metadata.current_version];
    return latest && isLive(latest, now) ? this.version(path, metadata.current_version) : null;
  }

  async config(): Promise<EngineConfig> {
    return withDefaults(await readJson<Partial<EngineConfig>>(this.store, CONFIG_KEY));
  }
}

/**
 * Runs a read-check-write of one key inside a transaction holding that key's lock, so concurrent
 * writers (on any replica) see each other's versions: check-and-set can never let two through.
 * A secret associated with sync destinations gets its sync queue entry in the same transaction.
 */
export function updateKey<T>(storage: StorageView, path: string, work: (records: KvRecords) => Promise<T>): Promise<T> {
  return storage.transaction(async (tx) => {
    // The sync queue's lock (which recordSecretChange takes) is taken with the key's, in that
    // order, so both cost one round trip.
    await Promise.all([tx.lock(METADATA_PREFIX + path), tx.lock(queueKey(path))]);
    const records = new KvRecords(tx);
    const result = await work(records);
    await recordSecretChange(tx, path, () => records.current(path, new Date()));
    return result;
  });
}

/** Changes some of the mount's settings, keeping the others, under the config's lock. */
export function updateConfig(storage: StorageView, settings: Partial<EngineConfig>): Promise<void> {
  return storage.transaction(async (tx) => {
    await tx.lock(CONFIG_KEY);
    await writeJson(tx, CONFIG_KEY, { ...(await new KvRecords(tx).config()), ...settings });
  });
}
