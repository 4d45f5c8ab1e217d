import { createHash } from 'node:crypto';
import { Mutex } from 'async-mutex';
import type { Physical, PhysicalTransaction, StoreSnapshot, WalEntry } from '@svc/storage';
import type { KeyClass, KeyClassifier } from './classify';
import { decodePage, encodePage, MerkleTree, PAGES, SUBPAGES, valueHash } from './merkle-tree';

export type TreeType = KeyClass;
export const TREE_TYPES: readonly TreeType[] = ['replicated', 'local'];
/** The tree numbers of Document 3's corruption report. */
const TREE_NUMBERS: Record<TreeType, string> = { replicated: '1', local: '2' };

/** Log entries folded into the index per read of the log. */
const CATCH_UP_BATCH = 1000;

/** Names of the index's metadata records beside the store. */
const META = {
  prefix: 'merkle/',
  page: (tree: TreeType, page: number) => `merkle/${tree}/page/${String(page).padStart(3, '0')}`,
  pagePrefix: (tree: TreeType) => `merkle/${tree}/page/`,
  treeRoot: (tree: TreeType) => `merkle/${tree}/root`,
  root: 'merkle/root',
  /** The log index the stored pages reflect. */
  index: 'merkle/index',
  /** The last merkle-check: its time and whether it found corruption. */
  check: 'merkle/check',
};

export interface ReindexOptions {
  /** Compare key by key with the index in use and report the keys that differed (slower). */
  diff?: boolean;
  /** Rebuild from storage alone, discarding the index in use, and write every page. */
  force?: boolean;
  /** Keep the rebuilt index in memory only; the next flush writes it. */
  skipFlush?: boolean;
}

/** Document 3's `merkle_corruption_report`. */
export interface MerkleCorruptionReport {
  corrupted_root: boolean;
  corrupted_tree_map: Record<string, {
    corrupted_subtree_root: boolean;
    root_hash: string;
    tree_type: TreeType;
    corrupted_index_tuples_map: Record<string, { corrupted: boolean; subpages: number[] }> | null;
  }>;
  last_corruption_check_epoch: string;
}

/** The outcome of the last merkle-check, for the replication status. */
export interface LastCheck {
  corrupted: boolean;
  epoch: string;
}

type Trees = Record<TreeType, MerkleTree>;

function newTrees(): Trees {
  return { replicated: new MerkleTree(), local: new MerkleTree() };
}

function combinedRoot(replicatedRoot: string, localRoot: string): string {
  return createHash('sha256').update(replicatedRoot).update(localRoot).digest('hex');
}

/** Thrown while folding the log when the index must be rebuilt from storage. */
class RebuildNeeded extends Error {}

/**
 * The Merkle index of one store: a replicated and a local tree (merkle-tree.ts), kept in memory
 * and brought up to date from the write-ahead log, so it follows the writes of every process
 * sharing the store, in commit order. `flush` writes the changed pages, the roots and the log
 * index they reflect to the store's metadata in one transaction; opened again, the index loads
 * them and folds the log from that index on. A log entry it can no longer read (trimmed), a
 * `reset` entry or a missing stored index make it rebuild from a storage scan.
 * One process owns the index of a store (the one that flushes it).
 */
export class MerkleIndex {
  private trees = newTrees();
  /** The last log index folded into the trees. */
  private indexed = 0;
  /** The log index of the last flush. */
  private flushedIndex = 0;
  /** The classifier's generation the trees' classes follow (none yet: stored trees are checked once). */
  private classifiedAt = -1;
  private readonly busy = new Mutex();

  private constructor(
    private readonly physical: Physical,
    private readonly classifier: KeyClassifier,
  ) {}

  /**
   * Switches the store's log on (the index follows it), loads the stored index (rebuilding it if
   * there is none) and folds the log written since.
   */
  static async open(physical: Physical, classifier: KeyClassifier): Promise<MerkleIndex> {
    await physical.log.setLogging(true);
    const index = new MerkleIndex(physical, classifier);
    await index.busy.runExclusive(() => index.load());
    await index.catchUp();
    return index;
  }

  /** The log index the trees reflect (`last_wal` once caught up). */
  get lastIndex(): number {
    return this.indexed;
  }

  /** The log index of the last flush: the log must be kept from there for a restart. */
  get durableIndex(): number {
    return this.flushedIndex;
  }

  tree(type: TreeType): MerkleTree {
    return this.trees[type];
  }

  /** Folds the log entries committed since the last call. */
  async catchUp(): Promise<void> {
    await this.busy.runExclusive(async () => {
      this.reclassify();
      try {
        await this.fold((idx, limit) => this.physical.log.entriesAfter(idx, limit), await this.physical.log.lastIndex());
      } catch (error) {
        if (!(error instanceof RebuildNeeded)) throw error;
        await this.rebuild({ force: true });
      }
    });
  }

  /** Writes the pages changed since the last flush, the roots and the log index, in one transaction. */
  async flush(): Promise<void> {
    await this.catchUp();
    await this.busy.runExclusive(() => this.write(false));
  }

  /** Rebuilds the index from a storage scan (Document 3's reindex); returns its warnings. */
  async reindex(options: ReindexOptions = {}): Promise<string[]> {
    return this.busy.runExclusive(() => this.rebuild(options));
  }

  /**
   * Compares the stored index with storage, as of one point in time: stored pages, with the log
   * written since their flush folded in, against pages computed from every stored entry; stored
   * roots against the roots of the stored pages. Records the outcome (`lastCheck`).
   */
  async check(): Promise<MerkleCorruptionReport> {
    await this.flush();
    const report = await this.physical.snapshot(async (snapshot) => {
      const stored = await this.readCurrent(snapshot);
      if (!stored.complete) throw new Error('merkle check: the log written since the last flush is no longer kept; reindex first');
      const fromStorage = await this.treesOf(snapshot);
      const storedRoots = { replicated: stored.roots.replicated ?? '', local: stored.roots.local ?? '' };
      const result: MerkleCorruptionReport = {
        corrupted_root: stored.root !== combinedRoot(storedRoots.replicated, storedRoots.local),
        corrupted_tree_map: {},
        last_corruption_check_epoch: new Date().toISOString(),
      };
      for (const type of TREE_TYPES) {
        const pages: Record<string, { corrupted: boolean; subpages: number[] }> = {};
        for (let page = 0; page < PAGES; page++) {
          if (!pageDiffers(stored, fromStorage, type, page)) continue;
          const subpages: number[] = [];
          for (let subpage = 0; subpage < SUBPAGES; subpage++) {
            if (stored.trees[type].bucketHash(page, subpage) !== fromStorage[type].bucketHash(page, subpage)) subpages.push(subpage);
          }
          pages[String(page)] = { corrupted: true, subpages };
        }
        result.corrupted_tree_map[TREE_NUMBERS[type]] = {
          corrupted_subtree_root: storedRoots[type] !== stored.pageRoots[type],
          root_hash: storedRoots[type],
          tree_type: type,
          corrupted_index_tuples_map: Object.keys(pages).length > 0 ? pages : null,
        };
      }
      return result;
    });
    const corrupted =
      report.corrupted_root ||
      Object.values(report.corrupted_tree_map).some((tree) => tree.corrupted_subtree_root || tree.corrupted_index_tuples_map !== null);
    await this.physical.transaction((tx) => tx.putMeta(META.check, Buffer.from(JSON.stringify({ corrupted, epoch: report.last_corruption_check_epoch }))));
    return report;
  }

  /** The outcome of the last merkle-check, if one ran. */
  async lastCheck(): Promise<LastCheck | undefined> {
    const stored = await this.physical.log.getMeta(META.check);
    return stored ? (JSON.parse(stored.toString('utf8')) as LastCheck) : undefined;
  }

  /** Folds log entries from `read` up to `last` into the trees. */
  private async fold(read: (idx: number, limit: number) => Promise<WalEntry[]>, last: number): Promise<void> {
    while (this.indexed < last) {
      const entries = await read(this.indexed, Math.min(CATCH_UP_BATCH, last - this.indexed));
      if (entries.length === 0 || entries[0].idx !== this.indexed + 1) throw new RebuildNeeded();
      for (const entry of entries) {
        if (entry.op === 'reset') throw new RebuildNeeded();
        this.apply(entry.key, entry.value);
        this.indexed = entry.idx;
      }
    }
  }

  /** After the local mounts changed: moves each key whose class changed to the other tree. */
  private reclassify(): void {
    if (this.classifiedAt === this.classifier.generation) return;
    this.classifiedAt = this.classifier.generation;
    for (const type of TREE_TYPES) {
      const moving = [...this.trees[type].entries()].filter(({ key }) => this.classifier.classify(key) !== type);
      for (const { key, hash } of moving) {
        this.trees[type].set(key, null);
        this.trees[this.classifier.classify(key)].set(key, hash);
      }
    }
  }

  /** Records a key's current value (null: removed) in its tree, and removes it from the other. */
  private apply(key: string, value: Buffer | null): void {
    // Keys of this copy alone are in neither tree: they differ between primary and secondary by design.
    const type = this.classifier.isShipped(key) ? this.classifier.classify(key) : undefined;
    for (const tree of TREE_TYPES) this.trees[tree].set(key, tree === type && value !== null ? valueHash(value) : null);
  }

  private async load(): Promise<void> {
    const stored = await this.physical.snapshot(readStored);
    const unreadable = TREE_TYPES.some((type) => stored.unreadable[type].size > 0);
    if (stored.root === undefined || unreadable) {
      await this.rebuild({ force: true });
      return;
    }
    this.trees = stored.trees;
    this.indexed = stored.index;
    this.flushedIndex = stored.index;
  }

  /** The trees of every entry of a snapshot of storage. */
  private async treesOf(snapshot: StoreSnapshot): Promise<Trees> {
    const builder = new MerkleIndex(this.physical, this.classifier);
    for await (const { key, value } of snapshot.entries) builder.apply(key, value);
    // Built, not changed: only pages that differ from the index in use are to be written.
    for (const type of TREE_TYPES) builder.trees[type].takeDirtyPages();
    return builder.trees;
  }

  /**
   * The stored index as of a snapshot, with the log written since its flush folded in (complete:
   * false when that log is no longer kept), and the roots of its pages as stored.
   */
  private async readCurrent(snapshot: StoreSnapshot): Promise<StoredIndex & { complete: boolean; pageRoots: Record<TreeType, string> }> {
    const stored = await readStored(snapshot);
    const pageRoots = { replicated: stored.trees.replicated.rootHash(), local: stored.trees.local.rootHash() };
    const folding = new MerkleIndex(this.physical, this.classifier);
    folding.trees = stored.trees;
    folding.indexed = stored.index;
    try {
      await folding.fold((idx, limit) => snapshot.entriesAfter(idx, limit), snapshot.lastIndex);
      return { ...stored, complete: true, pageRoots };
    } catch (error) {
      if (error instanceof RebuildNeeded) return { ...stored, complete: false, pageRoots };
      throw error;
    }
  }

  /**
   * Rebuilds the trees from a storage scan and writes the pages that differ from the stored
   * ones (every page when forced, or when the stored index cannot be brought up to date).
   */
  private async rebuild(options: ReindexOptions): Promise<string[]> {
    const { trees, stored, lastIndex } = await this.physical.snapshot(async (snapshot) => ({
      stored: options.force ? undefined : await this.readCurrent(snapshot),
      trees: await this.treesOf(snapshot),
      lastIndex: snapshot.lastIndex,
    }));
    const force = !stored?.complete;
    const warnings: string[] = [];
    for (const type of TREE_TYPES) {
      const before = stored?.trees[type];
      const after = trees[type];
      let pages = 0;
      let keys = 0;
      for (let page = 0; page < PAGES; page++) {
        if (!force && !pageDiffers(stored!, trees, type, page)) continue;
        after.markDirty([page]);
        pages++;
        if (options.diff && before) keys += differingKeys(before, after, page);
      }
      if (force) continue;
      if (pages > 0) warnings.push(`reindex: ${pages} page(s) of the ${type} tree differed from storage and were rebuilt`);
      if (options.diff && keys > 0) warnings.push(`reindex: ${keys} key(s) of the ${type} tree differed from storage`);
    }
    this.trees = trees;
    this.indexed = lastIndex;
    if (!options.skipFlush) await this.write(force);
    return warnings;
  }

  /** Writes dirty pages (or every page), the roots and the log index; pages stay dirty if it fails. */
  private async write(everyPage: boolean): Promise<void> {
    const dirty = { replicated: this.trees.replicated.takeDirtyPages(), local: this.trees.local.takeDirtyPages() };
    const pagesOf = (type: TreeType) => (everyPage ? Array.from({ length: PAGES }, (_, page) => page) : dirty[type]);
    const indexed = this.indexed;
    try {
      await this.physical.transaction(async (tx) => {
        for (const type of TREE_TYPES) {
          for (const page of pagesOf(type)) await writePage(tx, type, page, this.trees[type]);
          await tx.putMeta(META.treeRoot(type), Buffer.from(this.trees[type].rootHash()));
        }
        await tx.putMeta(META.root, Buffer.from(combinedRoot(this.trees.replicated.rootHash(), this.trees.local.rootHash())));
        await tx.putMeta(META.index, Buffer.from(String(indexed)));
      });
      this.flushedIndex = indexed;
    } catch (error) {
      for (const type of TREE_TYPES) this.trees[type].markDirty(dirty[type]);
      throw error;
    }
  }
}

async function writePage(tx: PhysicalTransaction, type: TreeType, page: number, tree: MerkleTree): Promise<void> {
  const entries = tree.pageEntries(page);
  await tx.putMeta(META.page(type, page), entries.length === 0 ? null : encodePage(entries));
}

/** Whether a stored page (unreadable, or with other hashes) differs from the page rebuilt from storage. */
function pageDiffers(stored: StoredIndex, rebuilt: Trees, type: TreeType, page: number): boolean {
  return stored.unreadable[type].has(page) || stored.trees[type].pageHash(page) !== rebuilt[type].pageHash(page);
}

function differingKeys(before: MerkleTree, after: MerkleTree, page: number): number {
  const keys = new Set([...before.pageEntries(page), ...after.pageEntries(page)].map(({ key }) => key));
  return [...keys].filter((key) => before.get(key) !== after.get(key)).length;
}

interface StoredIndex {
  trees: Trees;
  /** Pages whose stored form could not be read (loaded as empty). */
  unreadable: Record<TreeType, Set<number>>;
  roots: Partial<Record<TreeType, string>>;
  root: string | undefined;
  index: number;
}

async function readStored(snapshot: StoreSnapshot): Promise<StoredIndex> {
  const records = new Map((await snapshot.meta(META.prefix)).map(({ name, value }) => [name, value]));
  const text = (name: string) => records.get(name)?.toString('utf8');
  const stored: StoredIndex = {
    trees: newTrees(),
    unreadable: { replicated: new Set(), local: new Set() },
    roots: {},
    root: text(META.root),
    index: Number(text(META.index) ?? 0),
  };
  for (const type of TREE_TYPES) {
    stored.roots[type] = text(META.treeRoot(type));
    for (const [name, value] of records) {
      if (!name.startsWith(META.pagePrefix(type))) continue;
      const page = Number(name.slice(META.pagePrefix(type).length));
      const entries = decodePage(value);
      if (entries) stored.trees[type].loadPage(page, entries);
      else stored.unreadable[type].add(page);
    }
  }
  return stored;
}
