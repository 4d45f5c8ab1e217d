/**
 * Rotation of static roles' passwords: at creation, on demand (rotate-role) and when due (the core's
 * periodic call plus an in-process timer for periods under a minute). Every rotation holds the
 * role's lock from the engine context, so two replicas never rotate the same role at once, and
 * re-reads the role under it, so a due time is served once. A failed rotation leaves the stored
 * (and working) password alone and is retried.
 */
import type { MountInfo } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { LockManager } from '@svc/locks';
import { readJson, writeJson, type StorageView } from '@svc/storage';
import type { Logger } from 'pino';
import { checkRoleAllowed, type ConnectionRegistry } from './connections';
import { issueCredential } from './credentials';
import { talkToDatabase } from './errors';
import { STATIC_ROLES, type StaticRoleRecord } from './records';
import { RotationTimer } from './rotation-timer';
import { nextRotation, rotationDue } from './schedule';

const LOCK_TTL_MS = 60_000;
const RETRY_DELAY_MS = 10_000;
/** A replica that lost the race looks again soon to learn the winner's next due time. */
const CONTENDED_DELAY_MS = 1_000;

export interface RotationDependencies {
  mount: MountInfo;
  storage: StorageView;
  locks: LockManager;
  logger: Logger;
  connections: ConnectionRegistry;
  password: (policyName: string) => Promise<string>;
}

type Mode = { kind: 'create'; role: StaticRoleRecord } | { kind: 'manual' } | { kind: 'due' };

export class StaticRotations {
  private readonly timer: RotationTimer;

  constructor(private readonly deps: RotationDependencies) {
    this.timer = new RotationTimer((name) => this.rotateIfDue(name), RETRY_DELAY_MS);
  }

  /** Rotates now (creation or rotate-role). A role another replica is rotating is a 409. */
  async rotateNow(name: string, mode: Mode): Promise<StaticRoleRecord> {
    const rotated = await this.withRoleLock(name, (fence) => this.rotateLocked(name, mode, fence));
    if (rotated === null) throw ServiceError.conflict(`static role "${name}" is being rotated by another replica; try again`);
    if (rotated === undefined) throw ServiceError.badRequest(`unknown static role "${name}"`);
    this.timer.schedule(name, Date.parse(rotated.next_rotation));
    return rotated;
  }

  /** Rotates every due role and (re)arms the timer for the rest: the backend's periodic function. */
  async periodic(): Promise<void> {
    for (const name of await STATIC_ROLES.list(this.deps.storage)) {
      const next = await this.rotateIfDue(name).catch(() => Date.now() + RETRY_DELAY_MS);
      if (next !== undefined) this.timer.schedule(name, next);
    }
  }

  /** Keeps the timer in step with a role written or deleted through this replica. */
  track(name: string, role: StaticRoleRecord | null): void {
    if (role) this.timer.schedule(name, Date.parse(role.next_rotation));
    else this.timer.forget(name);
  }

  stop(): void {
    this.timer.stop();
  }

  /** When to look at the role next, or undefined when it no longer exists. */
  private async rotateIfDue(name: string): Promise<number | undefined> {
    const role = await this.withRoleLock(name, (fence) => this.rotateLocked(name, { kind: 'due' }, fence));
    if (role === null) return Date.now() + CONTENDED_DELAY_MS;
    return role && Date.parse(role.next_rotation);
  }

  private withRoleLock<T>(name: string, fn: (fence: number) => Promise<T>): Promise<T | null> {
    return this.deps.locks.withLock(`database/${this.deps.mount.uuid}/static-role/${name}`, LOCK_TTL_MS, (lock) => fn(lock.fencingToken));
  }

  private async rotateLocked(name: string, mode: Mode, fence = 0): Promise<StaticRoleRecord | undefined> {
    const { storage } = this.deps;
    // From storage itself: this process's read cache may not hold another replica's rotation yet.
    const role = mode.kind === 'create' ? mode.role : await STATIC_ROLES.getStored(storage, name);
    if (!role) return undefined;
    const now = new Date();
    if (mode.kind === 'due') {
      const due = rotationDue(role, now);
      if (due === 'wait') return role;
      if (due === 'missed') {
        const skipped = { ...role, next_rotation: nextRotation(role, now).toISOString() };
        await STATIC_ROLES.put(storage, name, skipped);
        return skipped;
      }
    }
    try {
      const rotated = await this.changeCredential(name, role, now, fence);
      this.deps.logger.info({ mount: this.deps.mount.path, role: name, reason: mode.kind }, 'rotated static role credentials');
      return rotated;
    } catch (err) {
      const message = err instanceof ServiceError ? err.message : 'internal error';
      this.deps.logger.warn({ mount: this.deps.mount.path, role: name, reason: mode.kind, error: message }, 'static role rotation failed');
      if (mode.kind === 'due') await STATIC_ROLES.put(storage, name, { ...role, last_rotation_error: message });
      throw err;
    }
  }

  private async changeCredential(name: string, role: StaticRoleRecord, now: Date, fence: number): Promise<StaticRoleRecord> {
    const { storage } = this.deps;
    const { record, plugin } = await this.deps.connections.get(storage, role.db_name);
    checkRoleAllowed(record, role.db_name, name);
    const credential = await issueCredential(role.credential_type, role.credential_config, {
      username: role.username,
      usernameContext: { DisplayName: '', RoleName: name },
      ttlSeconds: 0,
      password: (policy) => this.deps.password(policy || record.password_policy),
    });
    await talkToDatabase('rotate static role credentials', [record.password, credential.plugin.password ?? ''], () =>
      plugin.updateUser({ username: role.username, credential: { value: credential.plugin, statements: role.rotation_statements } }),
    );
    const rotated: StaticRoleRecord = {
      ...role,
      credential: credential.response,
      last_rotation: now.toISOString(),
      next_rotation: nextRotation(role, now).toISOString(),
      fence,
      last_rotation_error: undefined,
    };
    // Fencing: if a later lock holder already stored its rotation (ours outlived its lock), it wins.
    const key = STATIC_ROLES.keyOf(name);
    return storage.transaction(async (tx) => {
      await tx.lock(key);
      const stored = await readJson<StaticRoleRecord>(tx, key);
      if (stored && stored.fence > fence) return stored;
      await writeJson(tx, key, rotated);
      return rotated;
    });
  }
}
