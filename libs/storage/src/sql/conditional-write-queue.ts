import type { ConditionalWrite } from '../types';
import { shapeOf, type Queued } from './operations';
import { conditionalWriteParameters } from './statements';

/** Conditional writes sent together at most. */
const MAX_BATCH = 32;
/** Parameters of a batch at most (a write with many keys goes with fewer others): PostgreSQL takes 65,535 per statement. */
const MAX_BATCH_PARAMETERS = 20_000;

/** PostgreSQL's SQLSTATE for a transaction it chose to end to break a deadlock. */
const DEADLOCK_DETECTED = '40P01';

export interface ConditionalWriteSenders {
  one(write: ConditionalWrite): Promise<boolean>;
  /** The writes in one transaction, in this order; answers whether each wrote. */
  many(writes: ConditionalWrite[]): Promise<boolean[]>;
}

/**
 * Group commit for conditional writes: one statement of them is under way at a time, and the
 * writes that arrive meanwhile go together in the next, one transaction for all of them
 * (StoreStatements.writeBatchIfUnchanged), so a busy store pays one commit and one round trip for
 * many writes while a quiet one sends each write at once. A batch takes its writes in the order of
 * their first locked key, so two batches (of this process and others) never wait on each other's
 * locks in opposite orders; should the database still end a batch to break a deadlock with a
 * transaction, its writes are sent one by one.
 */
export class ConditionalWriteQueue {
  private underWay = false;
  private waiting: Queued<ConditionalWrite, boolean>[] = [];

  constructor(private readonly send: ConditionalWriteSenders) {}

  add(write: ConditionalWrite): Promise<boolean> {
    if (!this.underWay) {
      this.underWay = true;
      return this.send.one(write).finally(() => this.finished());
    }
    return new Promise((resolve, reject) => this.waiting.push({ item: write, resolve, reject }));
  }

  private finished(): void {
    this.underWay = this.waiting.length > 0;
    if (this.underWay) void this.sendBatch(this.nextBatch()).finally(() => this.finished());
  }

  /** The writes next in line, as many as one statement takes, at least one. */
  private nextBatch(): Queued<ConditionalWrite, boolean>[] {
    let count = 0;
    let parameters = 0;
    while (count < this.waiting.length && count < MAX_BATCH) {
      parameters += conditionalWriteParameters(shapeOf(this.waiting[count].item));
      if (count > 0 && parameters > MAX_BATCH_PARAMETERS) break;
      count++;
    }
    return this.waiting.splice(0, count);
  }

  private async sendBatch(batch: Queued<ConditionalWrite, boolean>[]): Promise<void> {
    if (batch.length === 1) return this.send.one(batch[0].item).then(batch[0].resolve, batch[0].reject);
    batch.sort((a, b) => compareFirstLocks(a.item, b.item));
    try {
      const written = await this.send.many(batch.map((entry) => entry.item));
      batch.forEach((entry, i) => entry.resolve(written[i]));
    } catch (error) {
      if ((error as { code?: unknown }).code !== DEADLOCK_DETECTED) return batch.forEach((entry) => entry.reject(error));
      // Nothing of the batch was written: each write is sent alone, as it would have been.
      await Promise.all(batch.map((entry) => this.send.one(entry.item).then(entry.resolve, entry.reject)));
    }
  }
}

function compareFirstLocks(a: ConditionalWrite, b: ConditionalWrite): number {
  const first = a.locks[0] ?? '';
  const second = b.locks[0] ?? '';
  return first < second ? -1 : first > second ? 1 : 0;
}
