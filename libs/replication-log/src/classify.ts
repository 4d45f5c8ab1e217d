import { mountOfKey } from '@svc/engine-host';

/**
 * Which storage keys replicate. `replicated` keys go to every secondary; `local` keys belong to
 * this cluster: performance secondaries never receive them (DR secondaries receive everything).
 * The key prefixes below are the whole static list; mounts are added at run time because a
 * mount's storage (`logical/<uuid>/`) is local by the mount's entry, not by its key.
 */
export type KeyClass = 'replicated' | 'local';

interface LocalPrefix {
  prefix: string;
  why: string;
}

export const LOCAL_PREFIXES: readonly LocalPrefix[] = [
  { prefix: 'sys/token/', why: 'tokens are issued by one cluster and valid only there' },
  { prefix: 'sys/expire/', why: 'leases belong to the tokens and secrets of the cluster that issued them' },
  { prefix: 'core/cluster/', why: "the cluster's own identity (cluster id, listener certificates)" },
  { prefix: 'core/replication/', why: "this cluster's replication mode, its primary or secondaries, filters and tokens" },
  { prefix: 'core/snapshot-auto/', why: 'automated snapshots are configured and scheduled per cluster' },
  { prefix: 'core/snapshot-restored', why: "the marker of a restore of this cluster's storage" },
  { prefix: 'core/plugin-reload', why: "a reload request to this cluster's processes" },
  { prefix: 'core/periodic-pass', why: "when this cluster's processes last ran the periodic functions" },
];

/**
 * Keys no secondary ever receives, in either mode, and the Merkle trees leave out: they belong to
 * this copy of the storage. The seal's entries are encrypted by this cluster's own root key (a
 * secondary keeps its seal and receives the primary's keyring over the cluster link instead), the
 * seal generation would seal a secondary with its primary, and the replication state would make a
 * secondary think it is its primary.
 */
export const OWN_PREFIXES: readonly LocalPrefix[] = [
  { prefix: 'core/seal-config', why: "this cluster's seal and its shares" },
  { prefix: 'core/root-key', why: "this cluster's root key, wrapped by its own seal" },
  { prefix: 'core/keyring', why: "the keyring under this cluster's root key (a secondary gets the primary's over the link)" },
  { prefix: 'core/recovery-key', why: "this cluster's recovery key" },
  { prefix: 'core/seal-generation', why: 'seals of this cluster, which its processes follow' },
  { prefix: 'core/rekey/', why: "rekey progress with this cluster's shares" },
  { prefix: 'core/unseal-keys-backup', why: "backups of this cluster's shares" },
  { prefix: 'core/recovery-keys-backup', why: "backups of this cluster's shares" },
  { prefix: 'core/generate-root', why: "root token generation with this cluster's shares" },
  { prefix: 'core/replication/', why: "this cluster's replication mode, its primary or secondaries" },
  { prefix: 'core/cluster', why: "the cluster's own identity" },
];

/**
 * The local mount tables of a namespace (`local: true` mounts), under its `core/`: each cluster
 * keeps its own, so a performance secondary receives the other mount tables only.
 */
export const LOCAL_MOUNT_TABLES = { secret: 'local-mounts', auth: 'local-auth' } as const;

/** The local mount tables of the root namespace and of every other one (`namespaces/<id>/`). */
const LOCAL_MOUNT_TABLE = new RegExp(`^(namespaces/[^/]+/)?core/(${Object.values(LOCAL_MOUNT_TABLES).join('|')})$`);

export class KeyClassifier {
  private localMounts = new Set<string>();
  private changes = 0;

  /**
   * The uuids of the mounts whose storage is local: mounts made with `local: true`, and cubbyhole
   * mounts (per-token storage, and the response-wrapping tokens kept in it).
   */
  setLocalMounts(uuids: Iterable<string>): void {
    const next = new Set(uuids);
    if (next.size === this.localMounts.size && [...next].every((uuid) => this.localMounts.has(uuid))) return;
    this.localMounts = next;
    this.changes++;
  }

  /**
   * Counts the changes of the local mounts: keys classed before a change may be in the wrong tree
   * (a secondary learns of a local mount from the same batch that brings its first keys).
   */
  get generation(): number {
    return this.changes;
  }

  /** Whether the key may reach a secondary at all (see OWN_PREFIXES). */
  isShipped(key: string): boolean {
    return !OWN_PREFIXES.some(({ prefix }) => key.startsWith(prefix));
  }

  classify(key: string): KeyClass {
    if (LOCAL_PREFIXES.some(({ prefix }) => key.startsWith(prefix)) || LOCAL_MOUNT_TABLE.test(key)) return 'local';
    const inMount = mountOfKey(key);
    return inMount && this.localMounts.has(inMount.uuid) ? 'local' : 'replicated';
  }
}
