import type { Logger } from 'pino';
import type { LockManager } from '@svc/locks';
import type { Counter, Gauge, Metrics } from '@svc/metrics';
import type { StorageView } from '@svc/storage';
import { describeRequestError, withinDeadline } from '@svc/api-contract';
import {
  associationKey,
  destinationId,
  dueDestinations,
  nameFields,
  parseDestinationId,
  PROVIDER_CALL_DEADLINE_MS,
  providerSecretName,
  QUEUE_PREFIX,
  readEntry,
  SecretNameError,
  SyncRecords,
  writeEntry,
  type Association,
  type Destination,
  type QueueEntry,
  type SyncStatus,
} from '@svc/sync-model';
import { openSecretStore, ProviderError, type ProviderEndpoints, type SecretStore } from './providers';

export interface SyncWorkerOptions {
  /** The barrier's root (the worker reads sync records and the outboxes of KV mounts). */
  storage: StorageView;
  locks: LockManager;
  logger: Logger;
  endpoints: ProviderEndpoints;
  /** Whether the barrier is sealed now: nothing can be read then. */
  sealed(): boolean;
  /** Whether this cluster writes a key (not a replicated one on a performance secondary: the primary syncs those). */
  writable(key: string): boolean;
  /** Whether syncing waits now (a DR secondary: its primary syncs the secrets). */
  paused?(): Promise<boolean>;
  pollIntervalMs?: number;
  /** Where the queue and the syncs are counted (sync.queue_depth, sync.operations). */
  metrics?: Metrics;
}

/** A job's lock; renewed while its holder works, so it lapses this soon after a holder dies. */
const JOB_LOCK_TTL_MS = 5_000;
const DEFAULT_POLL_MS = 50;
const IDLE_POLL_MS = 400;
/** Secrets synced to one destination at once, at most; destinations never wait for one another. */
const PARALLEL_PER_DESTINATION = 4;
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 60_000;

/** Exponential backoff with full jitter, as providers ask of their clients. */
export function retryDelayMs(attempts: number, random = Math.random): number {
  return Math.round(random() * Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.min(attempts, 16)));
}

/** What one destination's sync of an entry came to: done, retry later, or give up until the next `set` or change. */
type Outcome = 'done' | 'retry' | 'dropped';

/** A destination's mount: which accessor, namespace and path the associations of a mount uuid carry. */
interface MountOfAssociations {
  accessor: string;
}

/** A destination's provider, each operation bounded by the provider call deadline. */
interface BoundedStore {
  upsert(name: string, value: string): Promise<void>;
  remove(name: string): Promise<void>;
}

/**
 * The sync worker: it finds the queue entries in the outboxes of the KV mounts that have
 * associations, and brings each destination's copy of the secret to the entry's data (or deletes
 * it). The unit of work is a job: one entry at one destination. Jobs run side by side, a few per
 * destination, so a provider that is slow or does not answer only delays its own destination;
 * each provider operation has a deadline (PROVIDER_CALL_DEADLINE_MS) after which it is cancelled
 * and counts as a provider failure. Each job is taken under a lock (Redis in the distributed
 * topology, with fencing tokens), so one replica works on it at a time; a replica that dies leaves
 * the lock to expire and the job to another. A destination is taken off an entry only if no newer
 * change replaced the entry meanwhile, so the latest value is always the last one written.
 * Provider failures keep the destination on the entry for a retry with backoff (external) or record
 * the refusal (client) until the next change or `set`.
 */
export class SyncWorker {
  private readonly records: SyncRecords;
  private readonly stores = new Map<string, { key: string; store: SecretStore }>();
  /** Jobs under way in this process, keyed `<mount uuid>/<entry>/<destination>`. */
  private readonly jobs = new Map<string, Promise<void>>();
  /** How many of those jobs each destination has. */
  private readonly busyDestinations = new Map<string, number>();
  /** Cancels the provider operations under way when the worker stops. */
  private readonly stopping = new AbortController();
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = false;
  private readonly queueDepth?: Gauge<string>;
  private readonly operations?: Counter<string>;

  constructor(private readonly options: SyncWorkerOptions) {
    this.records = new SyncRecords(options.storage);
    this.queueDepth = options.metrics?.gauge('sync.queue_depth', 'Entries found in the sync outboxes by the last round of this worker');
    this.operations = options.metrics?.counter('sync.operations', 'Writes and deletes at sync destinations, by destination type and outcome (success or the status recorded)', ['destination_type', 'outcome']);
  }

  start(): void {
    const busyDelay = this.options.pollIntervalMs ?? DEFAULT_POLL_MS;
    let delay = busyDelay;
    const tick = () => {
      if (this.stopped) return;
      this.running = this.runOnce()
        // While the queues stay empty, rounds space out (up to IDLE_POLL_MS) to spare storage.
        .then((entries) => {
          delay = entries > 0 ? busyDelay : Math.min(delay * 2, IDLE_POLL_MS);
        })
        .catch((err: unknown) => this.options.logger.warn({ err: describeRequestError(err) }, 'sync round failed'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, delay);
        });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.stopping.abort();
    await this.running;
    await Promise.all(this.jobs.values());
    for (const { store } of this.stores.values()) store.close();
    this.stores.clear();
  }

  /**
   * One pass over every outbox: starts the jobs that are due (past their backoff), not under way
   * here already, and whose destination has a free slot; it does not wait for them. Answers how
   * many entries it found.
   */
  async runOnce(): Promise<number> {
    if (this.options.sealed() || (await this.options.paused?.())) return 0;
    const mounts = await this.mountsWithAssociations();
    let found = 0;
    for (const [uuid, mount] of mounts) {
      if (!this.options.writable(`logical/${uuid}/`)) continue;
      const outbox = this.options.storage.sub(`logical/${uuid}/`);
      for (const name of await outbox.list(QUEUE_PREFIX)) {
        if (name.endsWith('/')) continue;
        found++;
        const entry = await outbox.transaction((tx) => readEntry(tx, QUEUE_PREFIX + name));
        for (const destination of entry ? dueDestinations(entry, Date.now()) : []) this.startJob(uuid, mount, name, destination);
      }
    }
    this.queueDepth?.set(found);
    return found;
  }

  private async mountsWithAssociations(): Promise<Map<string, MountOfAssociations>> {
    const mounts = new Map<string, MountOfAssociations>();
    for (const { association } of await this.records.allAssociations()) mounts.set(association.mount_uuid, { accessor: association.accessor });
    return mounts;
  }

  private startJob(uuid: string, mount: MountOfAssociations, name: string, destination: string): void {
    const job = `${uuid}/${name}/${destination}`;
    const busy = this.busyDestinations.get(destination) ?? 0;
    if (this.stopped || this.jobs.has(job) || busy >= PARALLEL_PER_DESTINATION) return;
    this.busyDestinations.set(destination, busy + 1);
    const run = this.runJob(uuid, mount, name, destination)
      .catch((err: unknown) => this.options.logger.warn({ destination, err: describeRequestError(err) }, 'sync job failed'))
      .finally(() => {
        this.jobs.delete(job);
        const left = (this.busyDestinations.get(destination) ?? 1) - 1;
        if (left > 0) this.busyDestinations.set(destination, left);
        else this.busyDestinations.delete(destination);
      });
    this.jobs.set(job, run);
  }

  /** Syncs (or removes) the secret of entry `name` at one destination, then records the outcome in the entry. */
  private async runJob(uuid: string, mount: MountOfAssociations, name: string, destination: string): Promise<void> {
    // Renewed in the background while this replica works; a replica that dies lets it expire.
    await this.options.locks.withLock(`sync/${uuid}/${name}/${destination}`, JOB_LOCK_TTL_MS, async (lock) => {
      const outbox = this.options.storage.sub(`logical/${uuid}/`);
      const key = QUEUE_PREFIX + name;
      const entry = await outbox.transaction((tx) => readEntry(tx, key));
      if (!entry || !dueDestinations(entry, Date.now()).includes(destination)) return;
      const secretKey = associationKey(mount.accessor, entry.path);
      const removal = entry.removals.includes(destination);
      const outcome = removal ? await this.unsync(destination, secretKey) : await this.sync(destination, secretKey, entry.data);
      // Lost the lock (expired during a very slow call), or stopping: the replica that takes the job commits instead.
      if (this.stopping.signal.aborted || !(await lock.renew(JOB_LOCK_TTL_MS))) return;
      await outbox.transaction(async (tx) => {
        await tx.lock(key);
        const current = await readEntry(tx, key);
        if (!current) return;
        const backoff = { ...current.backoff };
        const next: QueueEntry = { ...current, backoff };
        if (outcome === 'retry') {
          if (!current.targets.includes(destination) && !current.removals.includes(destination)) return;
          const attempts = (backoff[destination]?.attempts ?? 0) + 1;
          backoff[destination] = { attempts, not_before: Date.now() + retryDelayMs(attempts) };
        } else {
          delete backoff[destination];
          if (removal) next.removals = current.removals.filter((id) => id !== destination);
          // A newer change replaced the entry: the destination still needs that newer data.
          else if (current.change === entry.change) next.targets = current.targets.filter((id) => id !== destination);
        }
        if (next.targets.length === 0 && next.removals.length === 0) await tx.delete(key);
        else await writeEntry(tx, next);
      });
    });
  }

  /** Brings one destination's copy of the secret to `data` (deletes it when null). */
  private async sync(id: string, secretKey: string, data: Record<string, unknown> | null): Promise<Outcome> {
    const { type, name } = parseDestinationId(id);
    const destination = await this.records.destination(type, name);
    const association = (await this.records.associations(type, name))[secretKey];
    if (!destination || !association || association.sync_status === 'UNSYNCING') return 'dropped';
    await this.setStatus(association, type, name, { sync_status: 'SYNCING' });
    return this.withProvider(destination, association, async (store) => {
      const wanted = data === null ? {} : this.remoteValues(destination, association, data);
      for (const { remoteName, value } of Object.values(wanted)) await store.upsert(remoteName, value);
      const names = Object.fromEntries(Object.entries(wanted).map(([subKey, { remoteName }]) => [subKey, remoteName]));
      const stale = Object.values(association.remote_names).filter((remote) => !Object.values(names).includes(remote));
      for (const remote of stale) await store.remove(remote);
      const status: SyncStatus = data === null ? 'UNSYNCED' : 'SYNCED';
      await this.setStatus(association, type, name, { sync_status: status, remote_names: names, last_error: undefined });
    });
  }

  /** Deletes the destination's copy of a secret that was unassociated, then forgets the association. */
  private async unsync(id: string, secretKey: string): Promise<Outcome> {
    const { type, name } = parseDestinationId(id);
    const destination = await this.records.destination(type, name);
    const association = (await this.records.associations(type, name))[secretKey];
    if (!association) return 'done';
    if (!destination) {
      await this.records.updateAssociation(type, name, secretKey, () => undefined);
      return 'done';
    }
    return this.withProvider(destination, association, async (store) => {
      for (const remote of Object.values(association.remote_names)) await store.remove(remote);
      await this.records.updateAssociation(type, name, secretKey, (current) => (current?.sync_status === 'UNSYNCING' ? undefined : current));
    });
  }

  /** Runs provider work; a failure is recorded on the association with its cause. */
  private async withProvider(destination: Destination, association: Association, work: (store: BoundedStore) => Promise<void>): Promise<Outcome> {
    const { type, name } = destination;
    try {
      await work(this.bounded(await this.store(destination)));
      this.operations?.inc({ destination_type: type, outcome: 'success' });
      return 'done';
    } catch (err) {
      // Cancelled because this worker stops: nothing is known about the provider; the job runs again.
      if (this.stopping.signal.aborted) return 'retry';
      const [status, outcome]: [SyncStatus, Outcome] =
        err instanceof ProviderError ? (err.side === 'client' ? ['CLIENT_SIDE_ERROR', 'dropped'] : ['EXTERNAL_SERVICE_ERROR', 'retry'])
        : err instanceof SecretNameError ? ['CLIENT_SIDE_ERROR', 'dropped']
        : ['INTERNAL_SERVICE_ERROR', 'retry'];
      this.operations?.inc({ destination_type: type, outcome: status });
      const cause = err instanceof ProviderError || err instanceof SecretNameError ? err.message : 'internal error';
      if (status === 'INTERNAL_SERVICE_ERROR') this.options.logger.error({ destination: destinationId(type, name), err: describeRequestError(err) }, 'sync failed');
      await this.setStatus(association, type, name, { sync_status: status, last_error: cause });
      return outcome;
    }
  }

  /**
   * Each operation of `store` under its own deadline, and cancelled when the worker stops. A
   * deadline that fires is the provider's failure, said as such rather than as the SDK words the
   * cancellation.
   */
  private bounded(store: SecretStore): BoundedStore {
    const timedOut = () => new ProviderError('external', `no answer from the provider within ${PROVIDER_CALL_DEADLINE_MS / 1000} s`);
    const run = (operation: (signal: AbortSignal) => Promise<void>) => withinDeadline(PROVIDER_CALL_DEADLINE_MS, operation, timedOut, this.stopping.signal);
    return {
      upsert: (name, value) => run((signal) => store.upsert(name, value, signal)),
      remove: (name) => run((signal) => store.remove(name, signal)),
    };
  }

  /** The provider names and values of a secret: one for the whole secret, or one per key. */
  private remoteValues(destination: Destination, association: Association, data: Record<string, unknown>): Record<string, { remoteName: string; value: string }> {
    const secret = { namespace: association.namespace, mount: association.mount, accessor: association.accessor, secretName: association.secret_name };
    const nameOf = (subKey: string) => providerSecretName(destination.type, association.secret_name_template, nameFields(destination, secret, subKey));
    if (association.granularity === 'secret-path') return { '': { remoteName: nameOf(''), value: JSON.stringify(data) } };
    return Object.fromEntries(
      Object.entries(data).map(([subKey, value]) => [subKey, { remoteName: nameOf(subKey), value: typeof value === 'string' ? value : JSON.stringify(value) }]),
    );
  }

  private setStatus(association: Association, type: string, name: string, change: Partial<Association>): Promise<void> {
    return this.records.updateAssociation(type, name, associationKey(association.accessor, association.secret_name), (current) => {
      if (!current) return current;
      // Being removed meanwhile: the removal owns the status, but must know what this sync left at
      // the provider (it runs after this pass, under the same entry lock) to delete all of it.
      if (current.sync_status === 'UNSYNCING' && change.sync_status !== 'UNSYNCING') return change.remote_names ? { ...current, remote_names: change.remote_names } : current;
      const next: Association = { ...current, ...change, updated_at: new Date().toISOString() };
      if (next.last_error === undefined) delete next.last_error;
      return next;
    });
  }

  /** Provider clients are kept per destination while its details stay the same. */
  private async store(destination: Destination): Promise<SecretStore> {
    const id = destinationId(destination.type, destination.name);
    const key = JSON.stringify(destination);
    const cached = this.stores.get(id);
    if (cached?.key === key) return cached.store;
    cached?.store.close();
    const store = await openSecretStore(destination, this.options.endpoints);
    this.stores.set(id, { key, store });
    return store;
  }
}
