import type { WalEntry } from '@svc/storage';

export interface ShipperBufferLimits {
  /** Entries kept at most (`log_shipper_buffer_length`). */
  maxEntries: number;
  /** Bytes of keys and values kept at most (`log_shipper_buffer_size`). */
  maxBytes: number;
}

/** What a reader gets: the entries after its index, or word that it fell behind the buffer. */
export type ShipperRead<Entry extends WalEntry = WalEntry> = { behind: false; entries: Entry[] } | { behind: true; oldestIndex: number };

/** Bookkeeping bytes counted per entry beside its key and value. */
const ENTRY_OVERHEAD_BYTES = 64;

function sizeOf(entry: WalEntry): number {
  return Buffer.byteLength(entry.key) + (entry.value?.length ?? 0) + ENTRY_OVERHEAD_BYTES;
}

/**
 * The primary's recent log entries in memory, bounded by count and by bytes, which secondaries
 * stream from. A secondary whose next entry has already left the buffer has fallen behind: it
 * resynchronizes by Merkle diff instead. Entries arrive in log order without gaps.
 */
export class ShipperBuffer {
  private entries: WalEntry[] = [];
  private bytes = 0;

  /** `lastIndex`: the log index the buffer starts after (entries up to it are not held). */
  constructor(
    private readonly limits: ShipperBufferLimits,
    private lastIndex: number,
  ) {
    if (!(Number.isInteger(limits.maxEntries) && limits.maxEntries > 0)) throw new Error('shipper buffer: maxEntries must be a positive integer');
    if (!(Number.isInteger(limits.maxBytes) && limits.maxBytes > 0)) throw new Error('shipper buffer: maxBytes must be a positive integer');
  }

  /** The index of the last entry appended. */
  get last(): number {
    return this.lastIndex;
  }

  /** Appends the next entries of the log, dropping the oldest beyond the limits. */
  append(entries: readonly WalEntry[]): void {
    for (const entry of entries) {
      if (entry.idx !== this.lastIndex + 1) throw new Error(`shipper buffer: expected log entry ${this.lastIndex + 1}, got ${entry.idx}`);
      this.entries.push(entry);
      this.bytes += sizeOf(entry);
      this.lastIndex = entry.idx;
    }
    let drop = 0;
    while (this.entries.length - drop > this.limits.maxEntries || (this.bytes > this.limits.maxBytes && this.entries.length - drop > 1)) {
      this.bytes -= sizeOf(this.entries[drop]);
      drop++;
    }
    if (drop > 0) this.entries = this.entries.slice(drop);
  }

  /**
   * The entries after `after`, at most `limit`; `behind` when some of them are no longer held, or
   * when the reader claims entries this log never had (it diverged: the same remedy applies).
   */
  read(after: number, limit: number): ShipperRead {
    const oldestIndex = this.entries.length > 0 ? this.entries[0].idx : this.lastIndex + 1;
    if (after + 1 < oldestIndex || after > this.lastIndex) return { behind: true, oldestIndex };
    const start = after + 1 - oldestIndex;
    return { behind: false, entries: this.entries.slice(start, start + limit) };
  }
}
