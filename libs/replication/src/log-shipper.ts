import {
  answerBucketHashes,
  answerBucketKeys,
  answerEntries,
  answerPageHashes,
  TREE_TYPES,
  type ClassifiedEntry,
  type KeyClass,
  type KeyClassifier,
  type KeyPosition,
  type MerkleSource,
  type ReplicationLog,
  type TreeType,
} from '@svc/replication-log';
import type { Physical, WalEntry } from '@svc/storage';
import { WAL_WAIT_MS } from './log-follower';
import { wokenOrTimedOut } from './waiters';
import { encodeEntries, encodeValue, LINK_PATHS } from './wal-wire';

/** How often the shipper buffer takes the entries committed since (a long-polling secondary hears of them then). */
const FOLLOW_INTERVAL_MS = 50;
/** How often the Merkle index is flushed and the log trimmed. */
const FLUSH_INTERVAL_MS = 1_000;
/** Entries and bytes of one answer to a secondary, well under the cluster link's answer limit. */
const MAX_BATCH_ENTRIES = 2_000;
const MAX_BATCH_BYTES = 8 * 1024 * 1024;

/** A secondary's next entries: those after `after` it receives, through log index `through` (entries it does not receive were skipped). */
export type ShippedBatch = { behind: true } | { behind: false; entries: WalEntry[]; after: number; through: number };

/**
 * What one secondary receives: `trees` it compares in a resync, and which keys (of those any
 * secondary may receive) it gets. `whole` when nothing of those trees is kept from it.
 */
export interface SecondaryScope {
  trees: readonly TreeType[];
  whole: boolean;
  receives(key: string, keyClass: KeyClass): boolean;
}

/** A DR secondary receives everything. */
export const DR_SCOPE: SecondaryScope = { trees: TREE_TYPES, whole: true, receives: () => true };

/** A performance secondary receives replicated keys, less those under `excludedPrefixes` (its paths filter). */
export function performanceScope(excludedPrefixes: readonly string[]): SecondaryScope {
  return {
    trees: ['replicated'],
    whole: excludedPrefixes.length === 0,
    receives: (key, keyClass) => keyClass === 'replicated' && !excludedPrefixes.some((prefix) => key.startsWith(prefix)),
  };
}

/**
 * The primary's side of streaming: keeps the replication log's shipper buffer filled (and the
 * Merkle index flushed, the log trimmed: a secondary's own log too) on a timer, and answers a
 * secondary's calls on the cluster link: a long-polled read of the log entries after its last
 * one, and the Merkle answers of a resync, each limited to what that secondary receives.
 */
export class LogShipper {
  private readonly timer: NodeJS.Timeout;
  private readonly waiters = new Set<() => void>();
  private lastFlush = 0;
  private ticking = false;
  private held = 0;

  constructor(
    private readonly physical: Physical,
    readonly log: ReplicationLog,
    private readonly classifier: KeyClassifier,
    /** The local mounts of the moment (the key classes depend on them), read before each fill and answer. */
    private readonly localMounts: () => string[],
    private readonly onError: (err: unknown) => void,
  ) {
    this.timer = setInterval(() => void this.tick(), FOLLOW_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    for (const wake of [...this.waiters]) wake();
  }

  /**
   * Answers a secondary's call (`path` of LINK_PATHS); `keyTerm` is the primary keyring's active
   * term. `scopeOf` is read when the entries are, not when the call came: a long-polled read
   * that waited through a paths-filter change ships by the new filter.
   */
  async answer(path: string, body: Record<string, unknown>, scopeOf: () => Promise<SecondaryScope>, keyTerm: number): Promise<Record<string, unknown>> {
    if (path === LINK_PATHS.wal) {
      const after = Number(body.after);
      if (!Number.isInteger(after) || after < 0) throw new Error('after must be a log index');
      const waitMs = Math.min(Math.max(Number(body.wait_ms) || 0, 0), WAL_WAIT_MS);
      const batch = await this.read(after, waitMs, async () => {
        const receives = this.receiver(await scopeOf());
        return (entry) => receives(entry.key, entry.class);
      });
      return batch.behind ? { behind: true, key_term: keyTerm } : { behind: false, key_term: keyTerm, after: batch.after, through: batch.through, entries: encodeEntries(batch.entries) };
    }
    const scope = await scopeOf();
    const receives = this.receiver(scope);
    const index = this.log.index;
    const source: MerkleSource = scope.whole ? index : { lastIndex: index.lastIndex, catchUp: () => index.catchUp(), tree: (type) => index.tree(type).filtered((key) => receives(key)) };
    const tree = (value: unknown): TreeType => {
      if (!scope.trees.includes(value as TreeType)) throw new Error(`tree ${JSON.stringify(value)} is not one this secondary receives`);
      return value as TreeType;
    };
    switch (path) {
      case LINK_PATHS.pageHashes: {
        const answer = await answerPageHashes(source, tree(body.tree));
        return { root: answer.root, pages: answer.pages, last_index: answer.lastIndex };
      }
      case LINK_PATHS.bucketHashes:
        return { buckets: answerBucketHashes(source, tree(body.tree), listOf<number>(body.pages, 'pages')) };
      case LINK_PATHS.bucketKeys:
        return { buckets: answerBucketKeys(source, tree(body.tree), listOf<KeyPosition>(body.buckets, 'buckets')) };
      case LINK_PATHS.entries: {
        const keys = listOf<unknown>(body.keys, 'keys').map((key) => String(key));
        // A key this secondary does not receive answers as absent: it is removed there if present.
        const found = new Map((await answerEntries(this.physical, keys.filter((key) => receives(key)))).map(({ key, value }) => [key, value]));
        return { entries: keys.map((key) => ({ key, value: encodeValue(found.get(key) ?? null) })) };
      }
      default:
        throw new Error(`unknown path ${path}`);
    }
  }

  /** Whether a secondary of `scope` receives a key (of its class, looked up unless given). */
  private receiver(scope: SecondaryScope): (key: string, keyClass?: KeyClass) => boolean {
    this.classifier.setLocalMounts(this.localMounts());
    return (key, keyClass = this.classifier.classify(key)) => this.classifier.isShipped(key) && scope.receives(key, keyClass);
  }

  /**
   * The entries after `after` that the predicate `shipping` makes once they are read lets through
   * (a `reset` always goes: the secondary must resynchronize), waiting up to `waitMs` for some to
   * be committed; `behind` when the buffer no longer holds them.
   */
  private async read(after: number, waitMs: number, shipping: () => Promise<(entry: ClassifiedEntry) => boolean>): Promise<ShippedBatch> {
    let read = this.log.read(after, MAX_BATCH_ENTRIES);
    if (read.behind) {
      // The reader may know a later index than the buffer holds yet (a resync answered from the
      // index, which follows the log on its own): fill the buffer before calling it behind.
      await this.log.follow();
      read = this.log.read(after, MAX_BATCH_ENTRIES);
    }
    if (!read.behind && read.entries.length === 0 && waitMs > 0) {
      await wokenOrTimedOut(this.waiters, waitMs);
      read = this.log.read(after, MAX_BATCH_ENTRIES);
    }
    if (read.behind) return { behind: true };
    const ships = await shipping();
    const entries: WalEntry[] = [];
    let through = after;
    let bytes = 0;
    for (const entry of read.entries) {
      const size = entry.key.length + (entry.value?.length ?? 0);
      if (entries.length > 0 && bytes + size > MAX_BATCH_BYTES) break;
      if (entry.op === 'reset' || ships(entry)) {
        entries.push({ idx: entry.idx, op: entry.op, key: entry.key, value: entry.value });
        bytes += size;
      }
      through = entry.idx;
    }
    return { behind: false, entries, after, through };
  }

  private async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      this.classifier.setLocalMounts(this.localMounts());
      if (Date.now() - this.lastFlush >= FLUSH_INTERVAL_MS) {
        await this.log.poll();
        this.lastFlush = Date.now();
      }
      const held = await this.log.follow();
      if (held !== this.held) {
        this.held = held;
        for (const wake of [...this.waiters]) wake();
      }
    } catch (err) {
      this.onError(err);
    } finally {
      this.ticking = false;
    }
  }

}

function listOf<T>(value: unknown, field: string): T[] {
  if (!Array.isArray(value)) throw new Error(`${field} must be a list`);
  return value as T[];
}
