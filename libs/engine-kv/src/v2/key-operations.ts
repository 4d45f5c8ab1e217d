import type { Response } from '@svc/framework';
import { ReadStamp, type StorageView } from '@svc/storage';
import type { Frozen, JsonObject } from '../json';
import { secretNotFound } from '../secret-path';
import { cachedStampedMetadata, KvRecords, sharedReads, stampedMetadata, updateKey, writeKeyIfUnchanged, type EngineConfig, type KeyChange, type KeyMetadata, type VersionState } from './records';
import { addVersion, checkAndSet, emptyMetadata, isLive, pruneVersions, versionMetadata } from './versions';

/**
 * A version as a read answers it: 404 for a key or version that does not exist, 404 with the
 * version's metadata for a deleted or destroyed one, otherwise the version's data under `field`,
 * as stored (`data`) or as `present` shows it (`subkeys`).
 */
export function versionResponse(
  storage: StorageView,
  path: string,
  requested: number,
  now: Date,
  ...[field, present]: ['data'] | ['subkeys', (data: JsonObject) => unknown]
): Promise<Response> {
  // The hottest read of the engine: what the read cache holds is answered at once, without a step
  // through the microtask queue per record.
  const answer = (metadata: Frozen<KeyMetadata> | null): Response | Promise<Response> => {
    const version = requested || (metadata?.current_version ?? 0);
    const state = metadata?.versions[version];
    if (!metadata || !state) throw secretNotFound();
    if (!isLive(state, now)) return goneVersion(field, metadata, version);
    const withText = (text: string | null): Response => {
      if (text === null) return goneVersion(field, metadata, version);
      if (field === 'data') return { dataJson: storedDataAnswer(metadata, version, text) };
      return { data: { [field]: present(JSON.parse(text) as JsonObject), metadata: versionMetadata(metadata, version) } };
    };
    const text = sharedReads.cachedVersionText(storage, path, version);
    return text === undefined ? sharedReads.versionText(storage, path, version).then(withText) : withText(text);
  };
  try {
    const metadata = sharedReads.cachedMetadata(storage, path);
    if (metadata === undefined) return sharedReads.metadata(storage, path).then(answer);
    const answered = answer(metadata);
    return answered instanceof Promise ? answered : Promise.resolve(answered);
  } catch (err) {
    return Promise.reject(err);
  }
}

/** A deleted or destroyed version: 404, with its metadata. */
function goneVersion(field: 'data' | 'subkeys', metadata: Frozen<KeyMetadata>, version: number): Response {
  return { status: 404, data: { [field]: null, metadata: versionMetadata(metadata, version) } };
}

/** The last answer made from each shared metadata record (see storedDataAnswer). */
const storedDataAnswers = new WeakMap<object, { version: number; text: string; answer: string }>();

/**
 * A data read's answer from the version's stored text, which is the data's JSON as written: it goes
 * into the answer unparsed. A hot key's answer is put together once per version of its metadata.
 */
function storedDataAnswer(metadata: Frozen<KeyMetadata>, version: number, text: string): string {
  const last = storedDataAnswers.get(metadata);
  if (last && last.version === version && last.text === text) return last.answer;
  const answer = `{"data":${text},"metadata":${JSON.stringify(versionMetadata(metadata, version))}}`;
  storedDataAnswers.set(metadata, { version, text, answer });
  return answer;
}

/** Conditional writes of a version before the locked transaction: the guess from the cache, then what storage holds. */
const OPTIMISTIC_ATTEMPTS = 2;

/**
 * Writes a new version: `nextData` computes it from the key as it stands (it may refuse), then
 * check-and-set is enforced and versions beyond the limit are pruned. The key is read without a
 * lock (from the read cache when it holds the key) and written in one step if it is still as read
 * (one round trip to SQL storage); a key that keeps changing, or a secret that syncs, is written
 * under the key's lock.
 */
export async function writeVersion(
  storage: StorageView,
  path: string,
  now: Date,
  cas: number | undefined,
  nextData: (records: KvRecords, existing: KeyMetadata | null) => Promise<JsonObject>,
): Promise<Response> {
  // The mount's settings are read through the storage cache: no round trip while the lock is
  // held. They change rarely, and a change reaches every replica's cache by its invalidation.
  const config = await sharedReads.config(storage);
  // A key the read cache knows nothing of is taken for new, so a new key costs one round trip; if
  // it exists, the write is tried again with what storage holds (the failed write made the cache
  // forget the key).
  let read = cachedStampedMetadata(storage, path) ?? { value: null, stamp: ReadStamp.ABSENT };
  for (let attempt = 1; attempt <= OPTIMISTIC_ATTEMPTS; attempt++) {
    if (attempt > 1) read = await stampedMetadata(storage, path);
    // What was read may be stale (the cache of another replica): a refusal is decided under the lock.
    const unlocked = await nextChange(new KvRecords(storage), read.value && (structuredClone(read.value) as KeyMetadata), config, now, cas, nextData).catch(() => undefined);
    if (unlocked && (await writeKeyIfUnchanged(storage, path, read.stamp, unlocked))) return { data: versionMetadata(unlocked.metadata, unlocked.version) };
  }
  return updateKey(storage, path, async (records) => {
    const change = await nextChange(records, await records.metadata(path), config, now, cas, nextData);
    await records.putVersion(path, change.version, change.data);
    for (const pruned of change.pruned) await records.deleteVersion(path, pruned);
    await records.putMetadata(path, change.metadata);
    return { data: versionMetadata(change.metadata, change.version) };
  });
}

/** The key's next state after a write of `nextData` onto `existing` (which it changes). */
async function nextChange(
  records: KvRecords,
  existing: KeyMetadata | null,
  config: EngineConfig,
  now: Date,
  cas: number | undefined,
  nextData: (records: KvRecords, existing: KeyMetadata | null) => Promise<JsonObject>,
): Promise<KeyChange> {
  const data = await nextData(records, existing);
  checkAndSet(existing, config, cas);
  const metadata = existing ?? emptyMetadata(now);
  const version = addVersion(metadata, config, now);
  return { metadata, version, data, pruned: pruneVersions(metadata, config) };
}

/** What delete, undelete and destroy do to one version; `apply` says whether anything changed. */
export interface VersionChange {
  apply(state: VersionState, now: Date): boolean;
  /** The version's data goes for good. */
  dropsData: boolean;
}

export const SOFT_DELETE: VersionChange = {
  apply(state, now) {
    if (!isLive(state, now)) return false;
    state.deletion_time = now.toISOString();
    return true;
  },
  dropsData: false,
};

export const UNDELETE: VersionChange = {
  apply(state) {
    if (state.destroyed || state.deletion_time === '') return false;
    state.deletion_time = '';
    return true;
  },
  dropsData: false,
};

export const DESTROY: VersionChange = {
  apply(state) {
    if (state.destroyed) return false;
    state.destroyed = true;
    return true;
  },
  dropsData: true,
};

/** Applies `change` to the versions `select` picks; versions that do not exist are skipped, as in Vault. */
export async function changeVersions(
  storage: StorageView,
  path: string,
  now: Date,
  select: (metadata: KeyMetadata) => number[],
  change: VersionChange,
): Promise<void> {
  await updateKey(storage, path, async (records) => {
    const metadata = await records.metadata(path);
    if (!metadata) return;
    const changed = select(metadata).filter((version) => {
      const state = metadata.versions[version];
      return state !== undefined && change.apply(state, now);
    });
    if (changed.length === 0) return;
    if (change.dropsData) for (const version of changed) await records.deleteVersion(path, version);
    await records.putMetadata(path, metadata);
  });
}
