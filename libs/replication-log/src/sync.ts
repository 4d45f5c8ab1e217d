import { ServiceError } from '@svc/api-contract';
import type { Physical, StoredEntry, WalEntry } from '@svc/storage';
import type { MerkleIndex, TreeType } from './merkle-index';
import { type KeyHash, type KeyPosition, type MerkleTree, PAGES, SUBPAGES } from './merkle-tree';

/**
 * The secondary's side of replication over its own store: applying streamed log entries, and
 * the Merkle diff protocol that brings it level with the primary when streaming cannot. Every
 * request and answer here is plain data, so any transport can carry them.
 */

/** The secondary's record of the last primary log entry it applied (`last_remote_wal`). */
const LAST_REMOTE_WAL = 'replication/last-remote-wal';

/** Thrown when the entries cannot be applied in order: the secondary must resynchronize by Merkle diff. */
export class ResyncRequiredError extends Error {}

export async function lastRemoteWal(physical: Physical): Promise<number> {
  const stored = await physical.log.getMeta(LAST_REMOTE_WAL);
  return stored ? Number(stored.toString('utf8')) : 0;
}

/** A secondary whose storage was wiped (activation) starts over: it has applied nothing. */
export async function forgetRemoteWal(physical: Physical): Promise<void> {
  await physical.transaction((tx) => tx.putMeta(LAST_REMOTE_WAL, null));
}

/**
 * The log range a filtered batch covers: the primary read entries `after + 1` to `through` and
 * shipped only those this secondary receives (its key classes, its paths filter), so the indexes
 * of `entries` may skip; `last_remote_wal` becomes `through`.
 */
export interface BatchRange {
  after: number;
  through: number;
}

/**
 * Applies a batch of the primary's log entries in one transaction with the new `last_remote_wal`
 * (all or nothing), then folds them into the index; returns the new `last_remote_wal`. Entries
 * already applied are skipped, so a batch may be delivered again; a gap or a `reset` entry
 * throws ResyncRequiredError. Without `range` the entries must follow each other; with it, they
 * may skip within the range, which must start at or before `last_remote_wal`. Batches are
 * applied one at a time (the stream's loop).
 */
export async function applyBatch(physical: Physical, index: MerkleIndex, entries: readonly WalEntry[], range?: BatchRange): Promise<number> {
  const before = await lastRemoteWal(physical);
  if (range && range.after > before) throw new ResyncRequiredError(`log entries ${before + 1} to ${range.after} are missing`);
  const applied = await physical.transaction(async (tx) => {
    let last = before;
    for (const entry of entries) {
      if (entry.idx <= last) continue;
      if (range ? entry.idx > range.through : entry.idx !== last + 1) throw new ResyncRequiredError(`log entry ${last + 1} is missing (got ${entry.idx})`);
      if (entry.op === 'reset') throw new ResyncRequiredError(`log entry ${entry.idx} resets the primary's storage`);
      if (entry.op === 'put') await tx.put(entry.key, entry.value!);
      else await tx.delete(entry.key);
      last = entry.idx;
    }
    if (range) last = Math.max(last, range.through);
    await tx.putMeta(LAST_REMOTE_WAL, Buffer.from(String(last)));
    return last;
  });
  await index.catchUp();
  return applied;
}

// ---- The primary's answers (read from its index and store) ----

/**
 * What the answers read: the primary's index, or a view of it for one secondary (its trees
 * without what the secondary's paths filter keeps from it).
 */
export interface MerkleSource {
  readonly lastIndex: number;
  catchUp(): Promise<void>;
  tree(type: TreeType): MerkleTree;
}

function checkPage(page: unknown): number {
  if (!Number.isInteger(page) || (page as number) < 0 || (page as number) >= PAGES) {
    throw ServiceError.badRequest(`merkle diff: page ${JSON.stringify(page)} is not an integer from 0 to ${PAGES - 1}`);
  }
  return page as number;
}

function checkPosition(position: KeyPosition): KeyPosition {
  checkPage(position.page);
  if (!Number.isInteger(position.subpage) || position.subpage < 0 || position.subpage >= SUBPAGES) {
    throw ServiceError.badRequest(`merkle diff: subpage ${JSON.stringify(position.subpage)} is not an integer from 0 to ${SUBPAGES - 1}`);
  }
  return position;
}

/** Round 1: the tree's root, its 256 page hashes and the log index they reflect (streaming resumes after it). */
export interface PageHashesAnswer {
  root: string;
  pages: string[];
  lastIndex: number;
}

export async function answerPageHashes(index: MerkleSource, tree: TreeType): Promise<PageHashesAnswer> {
  await index.catchUp();
  const merkle = index.tree(tree);
  return { root: merkle.rootHash(), pages: Array.from({ length: PAGES }, (_, page) => merkle.pageHash(page)), lastIndex: index.lastIndex };
}

/** Round 2: the bucket hashes of the pages asked for. */
export function answerBucketHashes(index: MerkleSource, tree: TreeType, pages: readonly number[]): { page: number; buckets: string[] }[] {
  const merkle = index.tree(tree);
  return pages.map(checkPage).map((page) => ({ page, buckets: Array.from({ length: SUBPAGES }, (_, subpage) => merkle.bucketHash(page, subpage)) }));
}

/** Round 3: the keys (with value hashes) of the buckets asked for. */
export function answerBucketKeys(index: MerkleSource, tree: TreeType, buckets: readonly KeyPosition[]): (KeyPosition & { keys: KeyHash[] })[] {
  const merkle = index.tree(tree);
  return buckets.map(checkPosition).map(({ page, subpage }) => ({ page, subpage, keys: merkle.bucketEntries(page, subpage) }));
}

/** Round 4: the stored values (ciphertext) of the keys asked for; null for a key since removed. */
export async function answerEntries(physical: Physical, keys: readonly string[]): Promise<{ key: string; value: Buffer | null }[]> {
  return Promise.all(keys.map(async (key) => ({ key, value: await physical.get(key) })));
}

// ---- The secondary's side ----

/** The primary's answers, however they travel. */
export interface MerkleRemote {
  pageHashes(tree: TreeType): Promise<PageHashesAnswer>;
  bucketHashes(tree: TreeType, pages: number[]): Promise<{ page: number; buckets: string[] }[]>;
  bucketKeys(tree: TreeType, buckets: KeyPosition[]): Promise<(KeyPosition & { keys: KeyHash[] })[]>;
  entries(keys: string[]): Promise<{ key: string; value: Buffer | null }[]>;
}

export function differingPages(index: MerkleIndex, tree: TreeType, theirs: readonly string[]): number[] {
  const merkle = index.tree(tree);
  return Array.from({ length: PAGES }, (_, page) => page).filter((page) => merkle.pageHash(page) !== theirs[page]);
}

export function differingBuckets(index: MerkleIndex, tree: TreeType, theirs: readonly { page: number; buckets: string[] }[]): KeyPosition[] {
  const merkle = index.tree(tree);
  return theirs.flatMap(({ page, buckets }) =>
    Array.from({ length: SUBPAGES }, (_, subpage) => subpage)
      .filter((subpage) => merkle.bucketHash(page, subpage) !== buckets[subpage])
      .map((subpage) => ({ page, subpage })),
  );
}

/** The keys to fetch (missing here or with another value) and to remove (absent there). */
export function keysToSync(index: MerkleIndex, tree: TreeType, theirs: readonly (KeyPosition & { keys: KeyHash[] })[]): { fetch: string[]; remove: string[] } {
  const merkle = index.tree(tree);
  const fetch: string[] = [];
  const remove: string[] = [];
  for (const { page, subpage, keys } of theirs) {
    const theirKeys = new Map(keys.map(({ key, hash }) => [key, hash]));
    for (const { key, hash } of keys) if (merkle.get(key) !== hash) fetch.push(key);
    for (const { key } of merkle.bucketEntries(page, subpage)) if (!theirKeys.has(key)) remove.push(key);
  }
  return { fetch, remove };
}

/** Writes fetched entries and removals in one transaction, then folds them into the index. */
export async function applySync(physical: Physical, index: MerkleIndex, entries: readonly { key: string; value: Buffer | null }[], remove: readonly string[]): Promise<void> {
  await physical.transaction(async (tx) => {
    for (const { key, value } of entries) {
      if (value === null) await tx.delete(key);
      else await tx.put(key, value);
    }
    for (const key of remove) await tx.delete(key);
  });
  await index.catchUp();
}

export interface SyncResult {
  /** Rounds until the roots were equal. */
  rounds: number;
  fetched: number;
  removed: number;
  /** The primary's log index the synced state reflects: streaming resumes after it. */
  lastRemoteIndex: number;
}

/** Values fetched per request. */
const FETCH_BATCH = 500;

/**
 * Merkle diff and sync of the given trees until their roots equal the primary's (the primary
 * may write meanwhile, so a round repeats until nothing differs or `maxRounds` is reached), then
 * records the primary's log index as `last_remote_wal`. A performance secondary syncs the
 * replicated tree only; a DR secondary both.
 */
export interface SyncOptions {
  maxRounds?: number;
  /**
   * Called with the keys written or removed after each round's apply: the secondary reloads what
   * they change (its mount tables decide the class of the keys the next round brings).
   */
  onApplied?: (keys: string[]) => Promise<void>;
}

export async function diffAndSync(physical: Physical, index: MerkleIndex, remote: MerkleRemote, trees: readonly TreeType[], options: SyncOptions = {}): Promise<SyncResult> {
  const { maxRounds = 10, onApplied } = options;
  const result: SyncResult = { rounds: 0, fetched: 0, removed: 0, lastRemoteIndex: Number.MAX_SAFE_INTEGER };
  for (const tree of trees) {
    for (let round = 1; ; round++) {
      if (round > maxRounds) throw new Error(`merkle sync of the ${tree} tree did not converge in ${maxRounds} rounds`);
      const answer = await remote.pageHashes(tree);
      result.rounds++;
      if (answer.root === index.tree(tree).rootHash()) {
        // Streaming replays from the earliest tree's point: entries replayed over a later state
        // are followed by the later entries themselves, so the state still converges.
        result.lastRemoteIndex = Math.min(result.lastRemoteIndex, answer.lastIndex);
        break;
      }
      const buckets = differingBuckets(index, tree, await remote.bucketHashes(tree, differingPages(index, tree, answer.pages)));
      const { fetch, remove } = keysToSync(index, tree, await remote.bucketKeys(tree, buckets));
      const fetched: StoredEntry[] = [];
      const removedThere: string[] = [];
      for (let start = 0; start < fetch.length; start += FETCH_BATCH) {
        for (const { key, value } of await remote.entries(fetch.slice(start, start + FETCH_BATCH))) {
          if (value === null) removedThere.push(key);
          else fetched.push({ key, value });
        }
      }
      await applySync(physical, index, fetched, [...remove, ...removedThere]);
      await onApplied?.([...fetched.map(({ key }) => key), ...remove, ...removedThere]);
      result.fetched += fetched.length;
      result.removed += remove.length + removedThere.length;
    }
  }
  await physical.transaction((tx) => tx.putMeta(LAST_REMOTE_WAL, Buffer.from(String(result.lastRemoteIndex))));
  return result;
}
