import type { Logger } from 'pino';
import type { LockManager } from '@svc/locks';
import type { Counter, Gauge, Metrics } from '@svc/metrics';
import type { StorageView } from '@svc/storage';
import { describeRequestError } from '@svc/http';
import {
  associationKey,
  destinationId,
  nameFields,
  parseDestinationId,
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

/** An entry's lock; renewed while its holder works, so it lapses this soon after a holder dies. */
const ENTRY_LOCK_TTL_MS = 5_000;
const DEFAULT_POLL_MS = 50;
const IDLE_POLL_MS = 400;
/** Entries of different secrets are synced side by side, up to this many at once. */
const PARALLEL_ENTRIES = 8;
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

/**
 * The sync worker: it finds the queue entries in the outboxes of the KV mounts that have
 * associations, and brings each destination's copy of the secret to the entry's data (or deletes
 * it). Each entry is taken under a lock (Redis in the distributed topology, with fencing tokens),
 * so one replica works on it at a time; a replica that dies leaves the lock to expire and the
 * entry to another. An entry is removed only if no newer change replaced it meanwhile, so the
 * latest value is always the last one written. Provider failures keep the entry for a retry with
 * backoff (external) or record the refusal (client) until the next change or `set`.
 */
export class SyncWorker {
  private readonly records: SyncRecords;
  private readonly stores = new Map<string, { key: string; store: SecretStore }>();
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
    await this.running;
    for (const { store } of this.stores.values()) store.close();
    this.stores.clear();
  }

  /** One pass over every outbox: each due entry this replica can lock is synced. Answers how many entries it found. */
  async runOnce(): Promise<number> {
    if (this.options.sealed() || (await this.options.paused?.())) return 0;
    const mounts = await this.mountsWithAssociations();
    const work: (() => Promise<void>)[] = [];
    for (const [uuid, mount] of mounts) {
      if (!this.options.writable(`logical/${uuid}/`)) continue;
      for (const name of await this.options.storage.list(`logical/${uuid}/${QUEUE_PREFIX}`)) {
        if (!name.endsWith('/')) work.push(() => this.processEntry(uuid, mount, name));
      }
    }
    this.queueDepth?.set(work.length);
    for (let start = 0; start < work.length; start += PARALLEL_ENTRIES) {
      await Promise.all(work.slice(start, start + PARALLEL_ENTRIES).map((run) => run()));
    }
    return work.length;
  }

  private async mountsWithAssociations(): Promise<Map<string, MountOfAssociations>> {
    const mounts = new Map<string, MountOfAssociations>();
    for (const { association } of await this.records.allAssociations()) mounts.set(association.mount_uuid, { accessor: association.accessor });
    return mounts;
  }

  private async processEntry(uuid: string, mount: MountOfAssociations, name: string): Promise<void> {
    // Renewed in the background while this replica works; a replica that dies lets it expire.
    await this.options.locks.withLock(`sync/${uuid}/${name}`, ENTRY_LOCK_TTL_MS, async (lock) => {
      const outbox = this.options.storage.sub(`logical/${uuid}/`);
      const key = QUEUE_PREFIX + name;
      const entry = await outbox.transaction((tx) => readEntry(tx, key));
      if (!entry || entry.not_before > Date.now()) return;
      const secretKey = associationKey(mount.accessor, entry.path);
      const removals = new Map<string, Outcome>();
      for (const id of entry.removals) removals.set(id, await this.unsync(id, secretKey));
      const targets = new Map<string, Outcome>();
      for (const id of entry.targets) targets.set(id, await this.sync(id, secretKey, entry.data));
      // Lost the lock (expired during a very slow call): the replica that took it commits instead.
      if (!(await lock.renew(ENTRY_LOCK_TTL_MS))) return;
      await outbox.transaction(async (tx) => {
        await tx.lock(key);
        const current = await readEntry(tx, key);
        if (!current) return;
        const pending = (outcomes: Map<string, Outcome>, id: string) => outcomes.get(id) === undefined || outcomes.get(id) === 'retry';
        const next: QueueEntry = { ...current, removals: current.removals.filter((id) => pending(removals, id)) };
        // A newer change replaced the entry: all its targets still need that newer data.
        if (current.change === entry.change) next.targets = current.targets.filter((id) => pending(targets, id));
        if (next.targets.length === 0 && next.removals.length === 0) {
          await tx.delete(key);
          return;
        }
        const failed = [...removals.values(), ...targets.values()].includes('retry');
        if (current.change === entry.change && failed) {
          next.attempts = current.attempts + 1;
          next.not_before = Date.now() + retryDelayMs(next.attempts);
        }
        await writeEntry(tx, next);
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
  private async withProvider(destination: Destination, association: Association, work: (store: SecretStore) => Promise<void>): Promise<Outcome> {
    const { type, name } = destination;
    try {
      await work(await this.store(destination));
      this.operations?.inc({ destination_type: type, outcome: 'success' });
      return 'done';
    } catch (err) {
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
