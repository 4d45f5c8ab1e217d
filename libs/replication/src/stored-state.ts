import { KeyClassifier, LOCAL_MOUNT_TABLES } from '@svc/replication-log';
import type { StorageView } from '@svc/storage';
import { REPLICATION_STORAGE_PREFIX, replicationStateKey } from './mode-state';
import type { ReplicationState } from './types';

/** How long a reading of the state is used before it is read again. */
const REFRESH_MS = 1_000;

/**
 * The replication state of a cluster as a process that holds none reads it from storage (a worker
 * service in its own process, or beside the core): whether this is a DR secondary, whose
 * background work waits until a promotion, and which keys it writes itself: on a performance
 * secondary its local keys only (its local mounts are those of its local mount tables; cubbyholes,
 * local too, no worker writes), since its primary works through the replicated ones. The background work calls `refresh` before each pass.
 */
export class StoredReplicationState {
  private drSecondary = false;
  private performanceSecondary = false;
  private readonly classifier = new KeyClassifier();
  private readAt = -Infinity;

  constructor(private readonly root: StorageView) {}

  /** Reads the state again, unless it was read less than REFRESH_MS ago (background work polls often). */
  async refresh(): Promise<void> {
    if (performance.now() - this.readAt < REFRESH_MS) return;
    const [performanceState, dr] = await Promise.all(
      (['performance', 'dr'] as const).map((mode) => this.root.getJSON<ReplicationState>(REPLICATION_STORAGE_PREFIX + replicationStateKey(mode))),
    );
    this.drSecondary = dr?.mode === 'secondary';
    this.performanceSecondary = performanceState?.mode === 'secondary';
    if (this.performanceSecondary) this.classifier.setLocalMounts(await this.localMountUuids());
    this.readAt = performance.now();
  }

  get isDrSecondary(): boolean {
    return this.drSecondary;
  }

  /** Whether this cluster writes `key` itself, as of the last refresh. */
  writable(key: string): boolean {
    if (!this.performanceSecondary || !this.classifier.isShipped(key)) return true;
    return this.classifier.classify(key) === 'local';
  }

  /** The mounts of every namespace's local mount tables (the root's, and those under `namespaces/<id>/`). */
  private async localMountUuids(): Promise<string[]> {
    const namespaces = ['', ...(await this.root.list('namespaces/')).filter((entry) => entry.endsWith('/')).map((id) => `namespaces/${id}`)];
    const tables = namespaces.flatMap((prefix) => Object.values(LOCAL_MOUNT_TABLES).map((table) => `${prefix}core/${table}`));
    const entries = await Promise.all(tables.map((key) => this.root.getJSON<{ uuid: string }[]>(key)));
    return entries.flatMap((table) => (table ?? []).map((mount) => mount.uuid));
  }
}
