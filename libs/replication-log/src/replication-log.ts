import type { Physical, WalEntry } from '@svc/storage';
import type { KeyClass, KeyClassifier } from './classify';
import { MerkleIndex, type MerkleCorruptionReport, type ReindexOptions } from './merkle-index';
import { ShipperBuffer, type ShipperBufferLimits, type ShipperRead } from './shipper-buffer';

/** The `replication` stanza's settings of the log shipper (server configuration). */
export const DEFAULT_SHIPPER_LIMITS: ShipperBufferLimits = { maxEntries: 16_384, maxBytes: 64 * 1024 * 1024 };

/** A log entry with the class of its key (a performance secondary receives `replicated` entries only). */
export interface ClassifiedEntry extends WalEntry {
  class: KeyClass;
}

/** Log entries read per query while filling the shipper buffer. */
const FILL_BATCH = 1000;

/**
 * The primary's replication storage: its Merkle index, the shipper buffer secondaries stream
 * from, and the log's retention. `poll` (called on a timer by its owner, the one process that
 * serves replication) folds new log entries into the index and the buffer, flushes the index and
 * trims the log: entries are kept while a restart needs them (after the index's last flush) and
 * as many as the buffer holds, so a restarted primary refills its buffer from the table.
 */
export class ReplicationLog {
  private constructor(
    private readonly physical: Physical,
    private readonly classifier: KeyClassifier,
    readonly index: MerkleIndex,
    private readonly buffer: ShipperBuffer,
    private readonly limits: ShipperBufferLimits,
  ) {}

  static async open(physical: Physical, classifier: KeyClassifier, limits: ShipperBufferLimits = DEFAULT_SHIPPER_LIMITS): Promise<ReplicationLog> {
    const index = await MerkleIndex.open(physical, classifier);
    const last = await physical.log.lastIndex();
    const wanted = Math.max(0, last - limits.maxEntries);
    const first = (await physical.log.entriesAfter(wanted, 1))[0];
    // The table may hold less than the buffer would: the buffer starts where the table does.
    const start = first ? first.idx - 1 : last;
    const log = new ReplicationLog(physical, classifier, index, new ShipperBuffer(limits, start), limits);
    await log.follow();
    return log;
  }

  /** The last log index committed (`last_wal`). */
  lastIndex(): Promise<number> {
    return this.physical.log.lastIndex();
  }

  /** Log entries after `idx` from the table, with their key classes. */
  async entriesAfter(idx: number, limit: number): Promise<ClassifiedEntry[]> {
    return (await this.physical.log.entriesAfter(idx, limit)).map((entry) => this.classified(entry));
  }

  /** Entries after `idx` from the shipper buffer, or `behind` when the reader must resynchronize. */
  read(idx: number, limit: number): ShipperRead<ClassifiedEntry> {
    const read = this.buffer.read(idx, limit);
    return read.behind ? read : { behind: false, entries: read.entries.map((entry) => this.classified(entry)) };
  }

  /** The root hash of the replicated tree, hex (`merkle_root`), as of the last catch-up. */
  merkleRoot(): string {
    return this.index.tree('replicated').rootHash();
  }

  merkleCheck(): Promise<MerkleCorruptionReport> {
    return this.index.check();
  }

  reindex(options: ReindexOptions): Promise<string[]> {
    return this.index.reindex(options);
  }

  /** Folds new entries into the index and the buffer, flushes the index and trims the log. */
  async poll(): Promise<void> {
    await this.follow();
    await this.index.flush();
    const keepAfter = Math.min(this.index.durableIndex, this.buffer.last - this.limits.maxEntries);
    if (keepAfter > 0) await this.physical.log.trimThrough(keepAfter);
  }

  private classified(entry: WalEntry): ClassifiedEntry {
    return { ...entry, class: this.classifier.classify(entry.key) };
  }

  /** Appends the entries committed since to the shipper buffer (cheap: what `poll` does first); returns the last index held. */
  async follow(): Promise<number> {
    for (;;) {
      const entries = await this.physical.log.entriesAfter(this.buffer.last, FILL_BATCH);
      if (entries.length === 0) return this.buffer.last;
      this.buffer.append(entries);
    }
  }
}
