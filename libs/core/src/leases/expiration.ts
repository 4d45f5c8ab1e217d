import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { ServiceError } from '@svc/api-contract';
import type { Lock, LockManager } from '@svc/locks';
import { readStoredJson, type StorageView } from '@svc/storage';
import { nowSeconds } from '../tokens/token-store';
import type { LeaseEntry } from './lease';

const ID = 'id/';
const BY_TOKEN = 'token/';
const TICK_MS = 1_000;
const LOCK_NAME = 'expiration';
const LOCK_TTL_MS = 10_000;
/** After a step-down, how long this replica leaves the expiry lock to the others. */
const STEP_DOWN_MS = 10_000;
const MAX_RETRY_DELAY_S = 300;

/** Full barrier key prefix of lease entries, for the replicas' cache sync. */
export const LEASE_KEY_PREFIX = `sys/expire/${ID}`;

/** How a lease is revoked: the core sends the engine a `revoke`, or revokes a token tree. */
export type Revoker = (lease: LeaseEntry) => Promise<void>;

/**
 * Leases: storage, lookup, renewal bookkeeping, and expiry. Exactly one gateway replica runs the
 * expiry loop (a Redis lock with fencing; in memory all-in-one); it keeps the due times of every
 * lease in memory, learns of leases created on other replicas through ReplicaSync, and revokes
 * what is due. A failed revocation stays recorded on the lease and is retried with backoff.
 */
export class ExpirationManager {
  private timer?: NodeJS.Timeout;
  private lock?: Lock;
  /** Due times (unix seconds) by storage key, loaded while this replica holds the lock. */
  private due?: Map<string, number>;
  private running = false;
  /** Until when (ms since epoch) this replica does not seek the expiry lock (sys/step-down). */
  private standingDownUntil = 0;

  constructor(
    private readonly storage: StorageView,
    private readonly locks: LockManager,
    private readonly revoker: Revoker,
    private readonly logger: Logger,
    /** True while leases must not expire here (a DR secondary: its primary expires them, and its data is not written here). */
    private readonly paused: () => boolean = () => false,
  ) {}

  /** Leases whose due times this replica holds: all of them while it runs the expiry loop, none otherwise. */
  get queueSize(): number {
    return this.due?.size ?? 0;
  }

  start(): void {
    this.timer ??= setInterval(() => void this.tick(), TICK_MS).unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.releaseLock();
  }

  /** Hands the expiry loop to another replica: the lock is released and not sought for a while. */
  async stepDown(): Promise<void> {
    this.standingDownUntil = Date.now() + STEP_DOWN_MS;
    await this.releaseLock();
  }

  private async releaseLock(): Promise<void> {
    this.due = undefined;
    await this.lock?.release().catch(() => undefined);
    this.lock = undefined;
  }

  static newLeaseId(path: string): string {
    return `${path.replace(/\/+$/, '')}/${randomBytes(18).toString('base64url').replace(/[-_]/g, 'x')}`;
  }

  static key(namespaceId: string, leaseId: string): string {
    return `${ID}${namespaceId}/${leaseId}`;
  }

  async put(namespaceId: string, entry: LeaseEntry): Promise<void> {
    const key = ExpirationManager.key(namespaceId, entry.leaseId);
    await this.storage.transaction(async (tx) => {
      await tx.put(key, Buffer.from(JSON.stringify(entry)));
      if (entry.tokenAccessor) await tx.put(`${BY_TOKEN}${entry.tokenAccessor}/${encodeURIComponent(key)}`, Buffer.alloc(0));
    });
    this.noteChanged(key, entry);
  }

  async get(namespaceId: string, leaseId: string): Promise<LeaseEntry | null> {
    if (!leaseId || leaseId.split('/').some((s) => s === '' || s === '..')) return null;
    return this.storage.getJSON<LeaseEntry>(ExpirationManager.key(namespaceId, leaseId));
  }

  /** Lease ids (and sub-directories) under a prefix, for LIST sys/leases/lookup/:prefix. */
  async list(namespaceId: string, prefix: string): Promise<string[]> {
    return this.storage.list(`${ID}${namespaceId}/${prefix}`);
  }

  /**
   * The lease ids a revoke-prefix names, matched by whole path segments as Vault does: a prefix
   * that is itself a lease id names that lease; any other prefix names the directory it ends in,
   * so "database/creds/app" covers "database/creds/app/..." and never "database/creds/app2/...".
   * The empty prefix names every lease of the namespace.
   */
  async idsUnder(namespaceId: string, prefix: string): Promise<string[]> {
    if (prefix.split('/').includes('..')) throw ServiceError.badRequest(`invalid lease prefix ${JSON.stringify(prefix)}: '..' segments are not allowed`);
    if (prefix !== '' && !prefix.endsWith('/')) {
      if (await this.get(namespaceId, prefix)) return [prefix];
      prefix += '/';
    }
    const base = `${ID}${namespaceId}/`;
    const out: string[] = [];
    const walk = async (dir: string) => {
      for (const name of await this.storage.list(base + dir)) {
        if (name.endsWith('/')) await walk(dir + name);
        else out.push(dir + name);
      }
    };
    await walk(prefix);
    return out;
  }

  /** Storage keys of the leases a token created. */
  async keysOfToken(tokenAccessor: string): Promise<string[]> {
    return (await this.storage.list(`${BY_TOKEN}${tokenAccessor}/`)).filter((k) => !k.endsWith('/')).map(decodeURIComponent);
  }

  async readKey(key: string): Promise<LeaseEntry | null> {
    return this.storage.getJSON<LeaseEntry>(key);
  }

  async delete(key: string, entry: LeaseEntry): Promise<void> {
    await this.storage.transaction(async (tx) => {
      await tx.delete(key);
      if (entry.tokenAccessor) await tx.delete(`${BY_TOKEN}${entry.tokenAccessor}/${encodeURIComponent(key)}`);
    });
    this.due?.delete(key);
  }

  /**
   * Revokes now: the engine (or token store) first, then the entry. A refusal stays on the lease
   * and is thrown; with `force` (revoke-force, the operator's last resort) it is logged and the
   * lease removed all the same, as Vault does. The lease is read from storage itself: this
   * process's read cache may still hold one another replica has revoked.
   */
  async revokeKey(key: string, force = false): Promise<void> {
    const entry = await readStoredJson<LeaseEntry>(this.storage, key);
    if (entry) await this.revokeEntry(key, entry, force);
    else this.due?.delete(key);
  }

  private async revokeEntry(key: string, entry: LeaseEntry, force = false): Promise<void> {
    try {
      await this.revoker(entry);
    } catch (err) {
      if (force) {
        this.logger.warn({ lease: entry.leaseId, error: revocationError(err) }, 'engine refused the revocation; lease removed anyway (revoke-force)');
      } else {
        const attempts = entry.revokeAttempts + 1;
        const retryAt = nowSeconds() + Math.min(MAX_RETRY_DELAY_S, 2 ** attempts);
        await this.storage.putJSON(key, { ...entry, revokeAttempts: attempts, lastRevokeError: revocationError(err), retryAt });
        this.due?.set(key, retryAt);
        throw err;
      }
    }
    await this.delete(key, entry);
  }

  /** tidy: removes by-token index entries whose lease no longer exists. */
  async tidy(): Promise<number> {
    let removed = 0;
    for (const dir of (await this.storage.list(BY_TOKEN)).filter((k) => k.endsWith('/'))) {
      for (const name of await this.storage.list(BY_TOKEN + dir)) {
        if (!(await this.storage.get(decodeURIComponent(name)))) {
          await this.storage.delete(BY_TOKEN + dir + name);
          removed++;
        }
      }
    }
    return removed;
  }

  /** Changes may have been missed: the expiry loop reads every due time again on its next tick. */
  forgetSchedule(): void {
    this.due = undefined;
  }

  /** A lease written on another replica: the expiry loop must know its due time. */
  async noteRemoteChange(keys: string[]): Promise<void> {
    if (!this.due) return;
    for (const key of keys) {
      const inView = key.slice('sys/expire/'.length);
      const entry = await this.readKey(inView);
      if (entry) this.due.set(inView, dueTime(entry));
      else this.due.delete(inView);
    }
  }

  private noteChanged(key: string, entry: LeaseEntry): void {
    this.due?.set(key, dueTime(entry));
  }

  private async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      // The schedule is loaded again from storage once work resumes (it changed meanwhile).
      if (this.paused()) return await this.releaseLock();
      if (!(await this.holdLock())) return;
      if (!this.due) this.due = await this.loadDueTimes();
      const now = nowSeconds();
      for (const [key, due] of [...this.due]) {
        if (due > now) continue;
        // Revocations can outlast the lock's TTL: each one starts only while the lock is still ours.
        if (!(await this.lock?.renew(LOCK_TTL_MS))) return await this.releaseLock();
        await this.revokeIfDue(key, now).catch((err: unknown) =>
          this.logger.warn({ lease: key.slice(ID.length), error: revocationError(err) }, 'lease revocation failed; will retry'),
        );
      }
    } catch (err) {
      this.logger.warn({ error: err instanceof ServiceError ? err.errors : (err as Error).name }, 'expiration tick failed');
    } finally {
      this.running = false;
    }
  }

  /**
   * Revokes a lease the schedule says is due, if storage agrees: it may have been revoked, or
   * renewed, through another replica whose change has not reached this one's schedule yet.
   */
  private async revokeIfDue(key: string, now: number): Promise<void> {
    const entry = await readStoredJson<LeaseEntry>(this.storage, key);
    if (!entry) this.due?.delete(key);
    else if (dueTime(entry) > now) this.due?.set(key, dueTime(entry));
    else await this.revokeEntry(key, entry);
  }

  /** Takes or keeps the expiry lock; losing it drops the in-memory schedule. */
  private async holdLock(): Promise<boolean> {
    if (Date.now() < this.standingDownUntil) return false;
    if (this.lock && (await this.lock.renew(LOCK_TTL_MS))) return true;
    this.lock = (await this.locks.tryAcquire(LOCK_NAME, LOCK_TTL_MS)) ?? undefined;
    if (!this.lock) this.due = undefined;
    return this.lock !== undefined;
  }

  private async loadDueTimes(): Promise<Map<string, number>> {
    const due = new Map<string, number>();
    const walk = async (dir: string) => {
      for (const name of await this.storage.list(dir)) {
        if (name.endsWith('/')) await walk(dir + name);
        else {
          const entry = await this.readKey(dir + name);
          if (entry) due.set(dir + name, dueTime(entry));
        }
      }
    };
    await walk(ID);
    return due;
  }
}

/** What a refused revocation is recorded and logged as: the engine's own words, never an unknown error's text. */
function revocationError(err: unknown): string {
  return err instanceof ServiceError ? err.errors.join('; ') : 'internal error';
}

function dueTime(entry: LeaseEntry): number {
  return entry.retryAt ?? entry.expireTime;
}
