import { randomUUID } from 'node:crypto';
import type { StorageView } from '@svc/storage';

/** The name and id of this cluster, created on its first unseal (sys/leader, replication status). */
export class ClusterIdentity {
  name = '';
  id = '';

  /** `coreView`: the barrier's `core/` entries. */
  constructor(private readonly coreView: StorageView) {}

  async load(): Promise<void> {
    let identity = await this.coreView.getJSON<{ name: string; id: string }>('cluster');
    if (!identity) {
      const id = randomUUID();
      identity = { name: `svc-cluster-${id.slice(0, 8)}`, id };
      await this.coreView.putJSON('cluster', identity);
    }
    this.name = identity.name;
    this.id = identity.id;
  }
}
