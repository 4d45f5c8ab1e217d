import { randomUUID } from 'node:crypto';
import type { ChangeFeed } from '@svc/storage';
import { ServiceError } from '@svc/api-contract';
import type { ReplicaSyncHooks } from './replica-sync';

/** How often a process looks at the feed between requests, so background work and sealed workers follow too. */
const BACKGROUND_POLL_MS = 50;

/**
 * Keeps this process's caches in step with the other processes that open the same store (the
 * gateway workers on embedded storage), with no message between them: every commit puts its keys
 * on the store's change feed, and before a request reads a cache this process applies what the
 * others committed since it last looked (one look at a counter in shared memory when nothing
 * changed). A write is therefore in force on every worker once it is committed, and it costs its
 * writer nothing per other worker. The surface is ReplicaSync's, which Core uses instead where
 * replicas share a store over the network.
 */
export class StoreFollower {
  readonly id = randomUUID();
  /** Changes outside the store (a seal, an unseal, a restore) waiting to be put on the feed. */
  private readonly announced = new Set<string>();
  /** The application of the changes found so far: requests wait for it, one after another. */
  private applying?: Promise<void>;
  /** Set after an application failed: the next one reloads everything. */
  private mustResync = false;
  private poller?: NodeJS.Timeout;

  constructor(
    private readonly feed: ChangeFeed,
    private readonly hooks: ReplicaSyncHooks,
  ) {}

  async start(): Promise<void> {
    this.poller = setInterval(() => {
      if (!this.upToDate) this.catchUp().catch(() => undefined);
    }, BACKGROUND_POLL_MS).unref();
  }

  stop(): void {
    clearInterval(this.poller);
  }

  /** Nothing to lose contact with: the store is the link. */
  readonly inContact = true;

  awaitContact(): Promise<void> {
    return Promise.resolve();
  }

  /** Whether this process's caches hold everything the others committed; if not, their application starts. */
  get upToDate(): boolean {
    if (this.mustResync) this.schedule(() => this.hooks.resync());
    else {
      const changed = this.feed.poll();
      if (changed === 'everything') this.schedule(() => this.hooks.resync());
      else if (changed) this.schedule(() => this.hooks.apply([...changed]));
    }
    return this.applying === undefined;
  }

  /** Resolves once every change found so far is applied; 503 when that failed (the next request tries again). */
  async catchUp(): Promise<void> {
    while (this.applying) {
      try {
        await this.applying;
      } catch {
        throw ServiceError.unavailable("this worker could not load the other workers' changes from storage; retry");
      }
    }
  }

  /** A write through the barrier is on the feed with its commit. */
  noteWrite(): void {}

  /** A change outside the store, for the other processes: put on the feed by `flush`. */
  announce(key: string): void {
    this.announced.add(key);
  }

  get hasPending(): boolean {
    return this.announced.size > 0;
  }

  async flush(): Promise<void> {
    if (this.announced.size === 0) return;
    const keys = [...this.announced];
    this.announced.clear();
    await this.feed.note(keys);
  }

  private schedule(application: () => Promise<void>): void {
    this.mustResync = false;
    const applying: Promise<void> = (this.applying ?? Promise.resolve())
      .catch(() => undefined)
      .then(application)
      .catch((err: unknown) => {
        this.mustResync = true;
        throw err;
      })
      .finally(() => {
        if (this.applying === applying) this.applying = undefined;
      });
    this.applying = applying;
    // A failure is for the requests waiting on it (catchUp); with none, nothing else hears of it.
    applying.catch(() => undefined);
  }
}
