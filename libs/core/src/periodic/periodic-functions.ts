import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { mountStoragePrefix, type EngineRegistry } from '@svc/engine-host';
import type { LockManager } from '@svc/locks';
import { readJson, writeJson, type Barrier } from '@svc/storage';
import type { ReplicaAnnouncer } from '../cluster/cache-coherence';
import { describeRequestError } from '@svc/api-contract';
import type { NamespaceRegistry } from '../namespaces/registry';
import type { Router } from '../routing/router';

const PERIODIC_INTERVAL_MS = 60_000;
/** Barrier key of when the cluster's last pass of the periodic functions started, whichever replica ran it. */
const PERIODIC_PASS_KEY = 'core/periodic-pass';
/** A replica's timer may fire a moment before a minute has passed since another replica's pass: it still runs the next one. */
const PERIODIC_TIMER_SLACK_MS = 1_000;

export interface PeriodicFunctionsDeps {
  namespaces: Pick<NamespaceRegistry, 'all'>;
  engines: Pick<EngineRegistry, 'forMount'>;
  router: Pick<Router, 'dispatch'>;
  barrier: Pick<Barrier, 'canWrite' | 'transaction'>;
  locks: Pick<LockManager, 'withLock'>;
  replicas: Pick<ReplicaAnnouncer, 'hasPending' | 'flush'>;
  /** A DR secondary's data is its primary's: rotations and tidying happen there. */
  isDrSecondary(): boolean;
  logger: Logger;
}

/**
 * Calls every mount's periodic function (rotations, tidy), as Vault's core does once a minute:
 * once a minute for the whole cluster, however many replicas' timers fire.
 */
export class PeriodicFunctions {
  private timer?: NodeJS.Timeout;

  constructor(private readonly deps: PeriodicFunctionsDeps) {}

  /** Runs a pass every minute from now on (while unsealed). */
  start(): void {
    this.timer ??= setInterval(() => {
      this.run().catch((err: unknown) => this.deps.logger.warn({ err: describeRequestError(err) }, 'periodic pass failed (taking its lock, recording it, or telling the other replicas of its changes); the next one tries again'));
    }, PERIODIC_INTERVAL_MS).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * One pass, if one is due. Under the lock the replica reads when the last pass started from
   * storage itself and records its own before it runs, so the replica that takes the lock next
   * skips until a minute has passed. A mount's failure does not stop the others.
   */
  async run(): Promise<void> {
    const { deps } = this;
    if (deps.isDrSecondary()) return;
    await deps.locks.withLock('core-periodic', PERIODIC_INTERVAL_MS, async () => {
      const started = await this.claimPass();
      if (!started) return;
      const mounts = deps.namespaces
        .all()
        .flatMap((namespace) => namespace.allMounts())
        .map(({ mount }) => mount)
        // Rotations and tidies write the mount's storage: where it is replicated, the primary's run comes back here.
        .filter((mount) => mount.type !== 'system' && (mount.external || deps.engines.forMount(mount)) && deps.barrier.canWrite(mountStoragePrefix(mount)));
      // Side by side: a mount whose provider is slow to answer (within its deadline) delays no other mount's rotations.
      await Promise.all(
        mounts.map(async (mount) => {
          const reply = await deps.router
            .dispatch({ kind: 'periodic', requestId: randomUUID(), mount, path: '', operation: 'update', data: {}, capabilities: ['root'] })
            .catch((err: unknown) => ({ ok: false as const, kind: 'internal' as const, errors: [describeRequestError(err).type] }));
          if (!reply.ok) deps.logger.warn({ mount: mount.path, kind: reply.kind, errors: reply.errors }, 'periodic function failed');
        }),
      );
      deps.logger.info({ mounts: mounts.length, started }, 'periodic functions ran');
    });
    // Outside any request: the other replicas drop what they cached of the keys the pass changed
    // (a rotated static role's key) now, not when this replica next serves a request.
    if (deps.replicas.hasPending) await deps.replicas.flush();
  }

  /** Whether the pass is due by what storage holds; if so, records that this one starts now and answers when. */
  private claimPass(): Promise<string | undefined> {
    return this.deps.barrier.transaction(async (tx) => {
      await tx.lock(PERIODIC_PASS_KEY);
      const last = await readJson<{ started: string }>(tx, PERIODIC_PASS_KEY);
      const now = Date.now();
      if (last && now < Date.parse(last.started) + PERIODIC_INTERVAL_MS - PERIODIC_TIMER_SLACK_MS) return undefined;
      const started = new Date(now).toISOString();
      await writeJson(tx, PERIODIC_PASS_KEY, { started });
      return started;
    });
  }
}
