import type { Logger } from 'pino';
import type { Bus, Subscription } from '@svc/bus';
import type { Lock, LockManager } from '@svc/locks';
import type { Replication } from '@svc/replication';
import { describeRequestError, ServiceError } from '@svc/api-contract';
import type { SealLifecycle } from '../seal/seal-lifecycle';
import type { ReplicaAnnouncer } from './cache-coherence';
import { serveReplicationOwnerCalls } from './replication-owner';

/** The lease whose holder, among the replication services of a cluster, owns its replication. */
const REPLICATION_LEASE = 'replication-owner';
/** How long the lease outlives its holder's last renewal: a standby takes over within it. */
const REPLICATION_LEASE_TTL_MS = 10_000;
const REPLICATION_LEASE_CHECK_MS = 2_000;

export interface ReplicationOwnershipDeps {
  replication: Pick<Replication, 'owns' | 'changeOwnership' | 'serveOwnerCall' | 'stop'>;
  seal: Pick<SealLifecycle, 'refreshSealState' | 'state'>;
  replicas: Pick<ReplicaAnnouncer, 'hasPending' | 'flush'>;
  locks: LockManager;
  bus: Bus;
  subjectPrefix: string;
  logger: Logger;
  /**
   * `lease`: this process owns the cluster's replication while it holds the replication lease
   * (a replication service; another stands by); otherwise whether it owns it is fixed.
   */
  byLease: boolean;
}

/**
 * Which process of a cluster owns its replication (the cluster listener, the log, the link to a
 * primary), and the other processes' calls to it over the bus while this one does.
 */
export class ReplicationOwnership {
  /** On the owner of the cluster's replication: the other processes' calls to it. */
  private ownerCalls?: Subscription;
  /** A replication service's lease on the cluster's replication, while it holds it. */
  private lease?: Lock;
  private leaseTimer?: NodeJS.Timeout;
  /** Lease checks run one at a time. */
  private leaseCheck: Promise<void> = Promise.resolve();
  private stopping = false;

  constructor(private readonly deps: ReplicationOwnershipDeps) {}

  start(): void {
    if (this.deps.replication.owns) this.serveOwnerCalls();
    if (this.deps.byLease) {
      this.leaseTimer = setInterval(() => void this.checkLease(), REPLICATION_LEASE_CHECK_MS);
      void this.checkLease();
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.leaseTimer);
    await this.leaseCheck;
    this.ownerCalls?.unsubscribe();
    await this.deps.replication.stop();
    // Given back at once: a standing-by replication service takes over without waiting for it to lapse.
    await this.lease?.release().catch(() => undefined);
  }

  private serveOwnerCalls(): void {
    this.ownerCalls = serveReplicationOwnerCalls(this.deps.bus, this.deps.subjectPrefix, (call, args) => this.serveOwnerCall(call, args));
  }

  /** A replication service renews its lease, or takes it when none holds it; owning the cluster's replication follows. */
  private checkLease(): Promise<void> {
    const { logger } = this.deps;
    this.leaseCheck = this.leaseCheck
      .then(async () => {
        if (this.stopping) return;
        if (this.lease) {
          if (await this.lease.renew(REPLICATION_LEASE_TTL_MS)) return;
          this.lease = undefined;
          logger.warn({}, "the replication lease lapsed: this replication service no longer owns the cluster's replication");
          await this.changeOwnership(false);
          return;
        }
        const lease = await this.deps.locks.tryAcquire(REPLICATION_LEASE, REPLICATION_LEASE_TTL_MS);
        if (!lease) return;
        this.lease = lease;
        logger.info({}, "replication lease taken: this replication service owns the cluster's replication");
        await this.changeOwnership(true);
      })
      .catch((err: unknown) => logger.warn({ err: describeRequestError(err) }, 'checking the replication lease failed; retrying'));
    return this.leaseCheck;
  }

  private async changeOwnership(owner: boolean): Promise<void> {
    this.ownerCalls?.unsubscribe();
    this.ownerCalls = undefined;
    await this.deps.replication.changeOwnership(owner, this.deps.seal.state === 'unsealed');
    if (owner) this.serveOwnerCalls();
  }

  /** A call of another process of this cluster to the replication this one owns. */
  private async serveOwnerCall(call: unknown, args: unknown): Promise<unknown> {
    if ((await this.deps.seal.refreshSealState()) !== 'unsealed') throw ServiceError.sealed();
    try {
      return await this.deps.replication.serveOwnerCall(call, args);
    } catch (err) {
      if (!(err instanceof ServiceError)) this.deps.logger.error({ call, err: describeRequestError(err) }, 'replication call from another process failed');
      throw err;
    } finally {
      // As after a request: the caller's process reloads what the call changed before it answers.
      if (this.deps.replicas.hasPending) await this.deps.replicas.flush();
    }
  }
}
