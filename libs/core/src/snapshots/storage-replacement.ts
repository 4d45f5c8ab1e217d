import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { ServiceError } from '@svc/api-contract';
import { REPLICATION_STORAGE_PREFIX } from '@svc/replication';
import { SEAL_STORAGE_KEYS } from '@svc/seal';
import { createSnapshot, openSnapshot, type SnapshotFile } from '@svc/snapshot';
import { createView, type Barrier, type Keyring, type Physical } from '@svc/storage';
import type { CacheCoherence, ReplicaAnnouncer } from '../cluster/cache-coherence';
import type { ClusterIdentity } from '../cluster/cluster-identity';
import { SEAL_GENERATION_KEY, STORAGE_RESTORED } from '../cluster/coherence-keys';
import type { SealLifecycle } from '../seal/seal-lifecycle';

/**
 * What a restore of this installation's own snapshot leaves as it is: the seal's entries (so the
 * unseal keys and keyring in force stay in force; the keyring only grows, so it reads every
 * snapshot of this installation) and the seal generation.
 */
const KEPT_ON_RESTORE: ReadonlySet<string> = new Set([...Object.values(SEAL_STORAGE_KEYS), SEAL_GENERATION_KEY]);
const FOREIGN_SNAPSHOT =
  'could not verify hash file, possibly the snapshot is using a different set of unseal keys; use the snapshot-force API to bypass this check';

export interface StorageReplacementDeps {
  /** The store below the barrier, as snapshots read it. */
  physical: Physical;
  /** The store a replacement writes: the read cache in front of `physical`, if there is one, so it forgets what it held. */
  writable: Physical;
  barrier: Barrier;
  seal: Pick<SealLifecycle, 'sealNow' | 'storeKeyring' | 'publishKeyring'>;
  coherence: Pick<CacheCoherence, 'mountUuids' | 'reloadRestored' | 'dropBackends'>;
  replicas: Pick<ReplicaAnnouncer, 'announce'>;
  clusterIdentity: Pick<ClusterIdentity, 'load'>;
  logger: Logger;
}

/**
 * The whole storage at once: a snapshot of it (sys/storage/raft/snapshot), a restore from one, and
 * a DR or performance secondary's activation, which replaces it with its primary's.
 */
export class StorageReplacement {
  constructor(private readonly deps: StorageReplacementDeps) {}

  /** An archive of the whole storage as of now (see @svc/snapshot). */
  save(): Promise<SnapshotFile> {
    return createSnapshot(this.deps.physical, this.deps.barrier.keyring);
  }

  /**
   * Checks the archive, then replaces the storage with it in one transaction. A snapshot of this
   * installation keeps the seal's entries in force and every process reloads what it cached
   * (mount tables, policies, tokens, engine backends with their caches), so the service answers as
   * at the snapshot's time. Another installation's snapshot (forced) brings its own seal: the
   * cluster seals, to be unsealed with that snapshot's keys.
   */
  async restore(body: Readable, force: boolean): Promise<void> {
    const { deps } = this;
    const snapshot = await openSnapshot(body, deps.barrier.keyring);
    try {
      if (!snapshot.sameInstallation && !force) throw ServiceError.badRequest(FOREIGN_SNAPSHOT);
      const before = deps.coherence.mountUuids();
      await deps.writable.replaceAll(snapshot.entries(), snapshot.sameInstallation ? KEPT_ON_RESTORE : new Set());
      deps.logger.warn({ snapshot: snapshot.meta.id, created_at: snapshot.meta.created_at, foreign: !snapshot.sameInstallation }, 'storage restored from a snapshot');
      if (!snapshot.sameInstallation) {
        // The storage is now readable only with the snapshot's keys: nothing is reloaded until then.
        await deps.coherence.dropBackends(before);
        await deps.seal.sealNow();
        return;
      }
      await deps.coherence.reloadRestored(before);
      deps.replicas.announce(STORAGE_RESTORED);
    } finally {
      await snapshot.dispose();
    }
  }

  /**
   * A secondary's activation: every entry goes but the seal's and `entries` (the replication
   * state), the primary's keyring becomes this cluster's (stored under this cluster's root key, so
   * its own unseal keys still open it), and every process drops what it cached, as after a restore.
   */
  async replaceForSecondary(keyring: Keyring, entries: [string, Buffer][]): Promise<void> {
    const { deps } = this;
    const before = deps.coherence.mountUuids();
    await deps.writable.replaceAll(noEntries(), KEPT_ON_RESTORE);
    await deps.seal.storeKeyring(keyring);
    const view = createView(deps.barrier, REPLICATION_STORAGE_PREFIX);
    for (const [key, value] of entries) await view.put(key, value);
    await deps.clusterIdentity.load();
    await deps.coherence.reloadRestored(before);
    await deps.seal.publishKeyring(keyring);
    deps.replicas.announce(STORAGE_RESTORED);
  }
}

async function* noEntries(): AsyncIterable<never> {}
