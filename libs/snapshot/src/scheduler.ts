import type { Logger } from 'pino';
import type { LockManager, Lock } from '@svc/locks';
import type { Counter, Gauge, Metrics } from '@svc/metrics';
import { createView, readJson, readStoredJson, writeJson, type Barrier, type Physical, type StorageView } from '@svc/storage';
import { createSnapshot } from './archive';
import { CONFIG_PREFIX, NO_STATUS, STATUS_PREFIX, type SnapshotConfig, type SnapshotStatus } from './config';
import { createTarget, snapshotName, snapshotsNewestFirst } from './targets';

/** How often the scheduler looks for configurations that are due. */
const TICK_MS = 1_000;
/** A run holds its configuration's lock this long between renewals (withLock renews it). */
const LOCK_TTL_MS = 30_000;

/** The stored status: what `status/:name` shows, and the fencing token of the run that wrote it. */
interface StoredStatus extends SnapshotStatus {
  fencing_token: number;
}

/** A configuration whose run is due, with the status its last run recorded (none before the first). */
interface DueRun {
  config: SnapshotConfig;
  status: StoredStatus | null;
}

export interface SchedulerOptions {
  /** The store snapshots are taken of (ciphertext, read directly). */
  physical: Physical;
  /** The barrier over it, holding the keyring while the cluster is unsealed: configurations and status live there. */
  barrier: Barrier;
  locks: LockManager;
  logger: Logger;
  /** The clock; tests of the schedule pass their own. */
  now?: () => Date;
  /** Where runs are counted (snapshot.last_success, snapshot.failures per configuration). */
  metrics?: Metrics;
  /** Whether runs wait now (a DR secondary: its primary takes the snapshots). */
  paused?(): Promise<boolean>;
}

/**
 * Runs the automated snapshot configurations (Document 1): each one every `interval` seconds,
 * on exactly one replica at a time (a lock per configuration; its fencing token is recorded with
 * the status, and a run whose token is older than the stored one does not overwrite it). A run
 * writes the snapshot to its target, deletes the oldest beyond `retain`, and records the outcome;
 * a failing configuration does not hold up the others. Nothing runs while the service is sealed.
 */
export class SnapshotScheduler {
  private timer?: NodeJS.Timeout;
  private readonly running = new Map<string, Promise<void>>();
  private stopped = false;
  private readonly now: () => Date;
  private readonly lastSuccess?: Gauge<string>;
  private readonly failures?: Counter<string>;

  constructor(private readonly options: SchedulerOptions) {
    this.now = options.now ?? (() => new Date());
    this.lastSuccess = options.metrics?.gauge('snapshot.last_success', 'When the last automated snapshot of a configuration was written (unix seconds)', ['config']);
    this.failures = options.metrics?.counter('snapshot.failures', 'Automated snapshots that failed, by configuration', ['config']);
  }

  start(): void {
    this.timer = setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await Promise.all(this.running.values());
  }

  /** Starts every configuration that is due and not already running here. */
  async tick(): Promise<void> {
    if (this.stopped || this.options.barrier.sealed) return;
    let names: string[];
    try {
      if (await this.options.paused?.()) return;
      names = (await this.view().list(CONFIG_PREFIX)).filter((name) => !name.endsWith('/'));
    } catch (err) {
      this.options.logger.warn({ err: (err as Error).message }, 'automated snapshots: listing configurations failed');
      return;
    }
    for (const name of names) {
      if (this.running.has(name)) continue;
      const run = this.runIfDue(name)
        .catch((err: unknown) => this.options.logger.warn({ config: name, err: (err as Error).message }, 'automated snapshot run failed'))
        .finally(() => this.running.delete(name));
      this.running.set(name, run);
    }
    await Promise.all(this.running.values());
  }

  private view(): StorageView {
    return createView(this.options.barrier, '');
  }

  /**
   * The configuration and its status when it is due. Outside the lock a cached read is enough to
   * pass over what is not due; under it, `stored` reads storage itself (this process's read cache
   * may not hold another replica's latest run yet), so a run just made elsewhere is not repeated.
   */
  private async due(name: string, stored = false): Promise<DueRun | undefined> {
    const read = <T>(key: string) => (stored ? readStoredJson<T>(this.view(), key) : this.view().getJSON<T>(key));
    const config = await read<SnapshotConfig>(CONFIG_PREFIX + name);
    if (!config) return undefined;
    const status = await read<StoredStatus>(STATUS_PREFIX + name);
    const last = status ? Date.parse(status.snapshot_start) : Number.NEGATIVE_INFINITY;
    return this.now().getTime() >= last + config.interval * 1000 ? { config, status } : undefined;
  }

  private async runIfDue(name: string): Promise<void> {
    if (!(await this.due(name))) return;
    await this.options.locks.withLock(`snapshot-auto-${name}`, LOCK_TTL_MS, async (lock) => {
      // Another replica may have run it between the check above and taking the lock.
      const due = await this.due(name, true);
      if (due) await this.run(name, due, lock);
    });
  }

  private async run(name: string, { config, status }: DueRun, lock: Lock): Promise<void> {
    const started = this.now();
    const fileName = snapshotName(config, started);
    const target = await createTarget(config);
    const url = target.url(fileName);
    // Refused when a later holder of the lock has recorded a run (this one outlived its lock): that one counts.
    if (!(await this.record(name, lock, { ...(status ?? NO_STATUS), snapshot_start: started.toISOString(), snapshot_url: url }))) {
      target.close();
      return;
    }
    this.options.logger.info({ config: name, url }, 'automated snapshot started');
    let error = '';
    try {
      const file = await createSnapshot(this.options.physical, this.options.barrier.keyring);
      try {
        if (!(await lock.renew())) throw new Error('lost the configuration\'s lock before writing the snapshot');
        await target.write(fileName, file);
      } finally {
        await file.dispose();
      }
      for (const old of snapshotsNewestFirst(config, await target.list()).slice(config.retain)) await target.delete(old);
      this.options.logger.info({ config: name, url }, 'automated snapshot written');
      this.lastSuccess?.set({ config: name }, this.now().getTime() / 1000);
    } catch (err) {
      error = (err as Error).message || String(err);
      this.failures?.inc({ config: name });
      this.options.logger.warn({ config: name, url, err: error }, 'automated snapshot failed');
    } finally {
      target.close();
    }
    await this.record(name, lock, {
      snapshot_start: started.toISOString(),
      snapshot_url: url,
      last_snapshot_start: started.toISOString(),
      last_snapshot_end: this.now().toISOString(),
      last_snapshot_error: error,
      last_snapshot_url: url,
    });
  }

  /** Stores the status unless a newer holder of the lock (a later fencing token) already has; answers whether it did. */
  private record(name: string, lock: Lock, status: SnapshotStatus): Promise<boolean> {
    const key = STATUS_PREFIX + name;
    return this.view().transaction(async (tx) => {
      await tx.lock(key);
      const current = await readJson<StoredStatus>(tx, key);
      if (current && current.fencing_token > lock.fencingToken) return false;
      // The configuration may have been deleted meanwhile: its status goes with it.
      if (!(await tx.get(CONFIG_PREFIX + name))) return false;
      await writeJson(tx, key, { ...status, fencing_token: lock.fencingToken } satisfies StoredStatus);
      return true;
    });
  }
}
