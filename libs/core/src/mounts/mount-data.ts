import { randomUUID } from 'node:crypto';
import { mountStoragePrefix } from '@svc/engine-host';
import { createView, type Barrier, type StorageView } from '@svc/storage';
import type { CacheCoherence } from '../cluster/cache-coherence';
import { PLUGIN_RELOAD_KEY } from '../cluster/coherence-keys';
import type { MountEntry } from './mount-table';

/** Barrier prefix of the statuses of mount moves (sys/remount/status), by migration id. */
const MOUNT_MOVES_PREFIX = 'core/mount-moves/';
const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Deletes every entry of `view` under `prefix`. */
export async function deleteTree(view: StorageView, prefix: string): Promise<void> {
  for (const key of await view.list(prefix)) {
    if (key.endsWith('/')) await deleteTree(view, prefix + key);
    else await view.delete(prefix + key);
  }
}

/** What happens to a mount's data and backends beyond its mount table entry: purge, reload, moves. */
export class MountData {
  constructor(
    private readonly barrier: Barrier,
    private readonly coherence: Pick<CacheCoherence, 'dropBackends'>,
  ) {}

  /** Deletes everything a disabled mount stored. */
  async purge(entry: MountEntry): Promise<void> {
    await this.coherence.dropBackends([entry.uuid]);
    await deleteTree(createView(this.barrier, mountStoragePrefix(entry)), '');
  }

  /**
   * sys/plugins/reload/backend: the mounts' backends are dropped (plugin processes stopped) here
   * and in the engine services, and built again on their next request; `global` has every other
   * gateway replica drop its own too, before the call returns.
   */
  async reloadBackends(uuids: readonly string[], global: boolean): Promise<void> {
    await this.coherence.dropBackends(uuids);
    if (global) await createView(this.barrier, '').putJSON(PLUGIN_RELOAD_KEY, { mounts: uuids });
  }

  /**
   * Remounts complete synchronously; the id lets clients poll as Vault's API expects. Kept in
   * storage, so any gateway replica or worker answers the poll.
   */
  async recordMove(from: string, to: string): Promise<string> {
    const id = randomUUID();
    await createView(this.barrier, MOUNT_MOVES_PREFIX).putJSON(id, { source_mount: from, target_mount: to, status: 'success' });
    return id;
  }

  /** The status of a mount move by its migration id. */
  async move(id: string): Promise<Record<string, string> | undefined> {
    if (!UUID_SHAPE.test(id)) return undefined;
    return (await createView(this.barrier, MOUNT_MOVES_PREFIX).getJSON<Record<string, string>>(id)) ?? undefined;
  }
}
