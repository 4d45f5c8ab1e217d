import { applyBatch, diffAndSync, lastRemoteWal, ResyncRequiredError, type MerkleIndex, type MerkleRemote, type TreeType } from '@svc/replication-log';
import type { Physical } from '@svc/storage';
import { decodeEntries, decodeValue, LINK_PATHS } from './wal-wire';
import { wokenOrTimedOut } from './waiters';

/** How long the primary holds a read of the log open while it has nothing new. */
export const WAL_WAIT_MS = 5_000;
/** Pause after a failed call before the next try (the heartbeats show the link down meanwhile). */
const RETRY_MS = 1_000;

/** The secondary's `state` in the status while it follows its primary. */
export type FollowerState = 'connecting' | 'stream-wals' | 'merkle-diff' | 'merkle-sync';

/** What the follower needs from the secondary it runs in. */
export interface FollowerHost {
  physical: Physical;
  index: MerkleIndex;
  /** The trees a resync compares: the replicated one (performance), both (DR). */
  trees: readonly TreeType[];
  /** A call on the cluster link to the primary. */
  call(path: string, body: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Makes sure this cluster holds the primary's keyring term `term` (the values are encrypted with it). */
  ensureKeyring(term: number): Promise<void>;
  /** Storage changed under the caches: these keys, or (a resync) anything. */
  changed(keys: string[] | undefined): Promise<void>;
  logger: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

/**
 * The secondary's side of streaming: reads the primary's log after its `last_remote_wal`
 * (long-polled), applies each batch in one transaction, and, when the primary's buffer no longer
 * holds what it needs or a batch cannot be applied in order, resynchronizes by Merkle diff and
 * sync, then streams again.
 */
export class LogFollower {
  private current: FollowerState = 'connecting';
  private applied = 0;
  private running = true;
  private failing = false;
  private resyncWanted = false;
  private readonly waiters = new Set<() => void>();
  private readonly done: Promise<void>;

  constructor(private readonly host: FollowerHost) {
    this.done = this.run();
  }

  get state(): FollowerState {
    return this.current;
  }

  /** The primary's last log index applied here. */
  get lastRemoteIndex(): number {
    return this.applied;
  }

  async stop(): Promise<void> {
    this.running = false;
    for (const wake of [...this.waiters]) wake();
    await this.done;
  }

  /** Has the next step resynchronize by Merkle diff and sync (the paths filter changed). */
  resyncSoon(): void {
    this.resyncWanted = true;
  }

  /** Resolves true once the primary's log index `index` is applied here, false after `timeoutMs`. */
  async waitForRemoteIndex(index: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.applied < index) {
      const left = deadline - Date.now();
      if (left <= 0 || !this.running) return false;
      await wokenOrTimedOut(this.waiters, left);
    }
    return true;
  }

  private async run(): Promise<void> {
    this.setApplied(await lastRemoteWal(this.host.physical));
    while (this.running) {
      try {
        await this.step();
        this.failing = false;
      } catch (err) {
        if (!this.running) return;
        if (err instanceof ResyncRequiredError) {
          await this.resync().catch((failure: unknown) => this.failed(failure));
          // A store answering without I/O (in memory) must not keep the timers from running.
          await new Promise((resolve) => setImmediate(resolve));
        } else {
          this.failed(err);
        }
        if (this.failing) await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
  }

  private async step(): Promise<void> {
    if (this.resyncWanted) {
      this.resyncWanted = false;
      throw new ResyncRequiredError('the paths filter changed');
    }
    const answer = await this.host.call(LINK_PATHS.wal, { after: this.applied, wait_ms: WAL_WAIT_MS });
    await this.host.ensureKeyring(Number(answer.key_term));
    if (answer.behind === true) throw new ResyncRequiredError("the primary's log no longer holds the entries this secondary needs");
    const entries = decodeEntries(answer.entries);
    const range = { after: Number(answer.after), through: Number(answer.through) };
    if (!Number.isInteger(range.after) || !Number.isInteger(range.through)) throw new Error('the primary answered a malformed batch');
    this.current = 'stream-wals';
    if (range.through <= this.applied) return;
    const applied = await applyBatch(this.host.physical, this.host.index, entries, range);
    // Caches reloaded (here and on the other processes) before a write waiting for this index is answered.
    if (entries.length > 0) await this.host.changed(entries.map((entry) => entry.key));
    this.setApplied(applied);
  }

  private async resync(): Promise<void> {
    this.current = 'merkle-diff';
    const result = await diffAndSync(this.host.physical, this.host.index, this.remote(), this.host.trees, { onApplied: (keys) => this.host.changed(keys) });
    this.setApplied(result.lastRemoteIndex);
    this.failing = false;
    this.host.logger.info({ rounds: result.rounds, fetched: result.fetched, removed: result.removed, last_remote_wal: result.lastRemoteIndex }, 'replication resynchronized by merkle diff and sync');
    // Whatever the rounds changed was reloaded key by key; the engines' caches go as after a restore.
    await this.host.changed(undefined);
  }

  /** The primary's Merkle answers over the link; the state shows which half of a resync runs. */
  private remote(): MerkleRemote {
    const call = (path: string, body: Record<string, unknown>, state: FollowerState) => {
      this.current = state;
      return this.host.call(path, body);
    };
    return {
      pageHashes: async (tree) => {
        const answer = await call(LINK_PATHS.pageHashes, { tree }, 'merkle-diff');
        return { root: String(answer.root), pages: answer.pages as string[], lastIndex: Number(answer.last_index) };
      },
      bucketHashes: async (tree, pages) => (await call(LINK_PATHS.bucketHashes, { tree, pages }, 'merkle-diff')).buckets as { page: number; buckets: string[] }[],
      bucketKeys: async (tree, buckets) => (await call(LINK_PATHS.bucketKeys, { tree, buckets }, 'merkle-diff')).buckets as Awaited<ReturnType<MerkleRemote['bucketKeys']>>,
      entries: async (keys) => {
        const answer = await call(LINK_PATHS.entries, { keys }, 'merkle-sync');
        return (answer.entries as { key: string; value: unknown }[]).map(({ key, value }) => ({ key, value: decodeValue(value) }));
      },
    };
  }

  private setApplied(index: number): void {
    this.applied = index;
    for (const wake of [...this.waiters]) wake();
  }

  private failed(err: unknown): void {
    this.current = 'connecting';
    if (!this.failing) this.host.logger.warn({ err: err instanceof Error ? err.message : 'failed' }, 'replication stream interrupted; retrying');
    this.failing = true;
  }
}
