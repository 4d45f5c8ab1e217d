import { ForwardingPhysical } from './forwarding';
import { recordingWrites } from './recorded-transaction';
import type { ChangeFeed, ConditionalWrite, Physical, PhysicalTransaction } from './types';

/**
 * A store that keeps no change feed of its own (PostgreSQL) opened by several processes of one
 * machine (the gateway workers of one server), each of which notes the keys of its writes on a
 * feed beside it (`feedStore`, a temporary embedded store the server made): a write returns once
 * its keys are on the feed, so the other processes follow it as they follow an embedded store's,
 * with no message between them. Gateways on other machines keep telling each other (ReplicaSync).
 * A replaced store (a restore) the core announces itself.
 */
export class FeedRecordingPhysical extends ForwardingPhysical {
  constructor(
    inner: Physical,
    private readonly feedStore: Physical,
  ) {
    super(inner);
  }

  override get changes(): ChangeFeed {
    const feed = this.feedStore.changes;
    if (!feed) throw new Error('the change feed store must be opened beside the process that holds it (lockHeldBy)');
    return feed;
  }

  override async open(): Promise<void> {
    await this.feedStore.open();
    try {
      await this.inner.open();
    } catch (error) {
      await this.feedStore.close();
      throw error;
    }
  }

  override async close(): Promise<void> {
    await this.inner.close();
    await this.feedStore.close();
  }

  override async put(key: string, value: Buffer): Promise<void> {
    await this.inner.put(key, value);
    await this.changes.note([key]);
  }

  override async delete(key: string): Promise<void> {
    await this.inner.delete(key);
    await this.changes.note([key]);
  }

  override async writeIfUnchanged(write: ConditionalWrite): Promise<boolean> {
    const written = await this.inner.writeIfUnchanged(write);
    if (written) await this.changes.note([...write.writes.keys()]);
    return written;
  }

  override async transaction<T>(fn: (tx: PhysicalTransaction) => Promise<T>): Promise<T> {
    const written = new Set<string>();
    const result = await this.inner.transaction((tx) => fn(recordingWrites(tx, (key) => written.add(key))));
    if (written.size > 0) await this.changes.note([...written]);
    return result;
  }
}
