import type { Bus } from '@svc/bus';
import { encodeJson } from '@svc/bus';
import { mountOfKey, mountInvalidationSubject, mountRemovedSubject, type EngineHost, type MountInvalidation, type PluginHost } from '@svc/engine-host';
import { REPLICATION_STORAGE_PREFIX, type Replication } from '@svc/replication';
import { createView, type Barrier, type CachedPhysical } from '@svc/storage';
import type { AuditDevices } from '../audit/audit-devices';
import { AUDIT_TABLE_KEY } from '../audit/audit-devices';
import type { ExpirationManager } from '../leases/expiration';
import { LEASE_KEY_PREFIX } from '../leases/expiration';
import { isMountTableKey, type MountEntry } from '../mounts/mount-table';
import { Namespace } from '../namespaces/namespace';
import { NAMESPACES_KEY, type NamespaceRegistry } from '../namespaces/registry';
import { POLICY_PREFIX } from '../policies/policy-store';
import type { SealLifecycle } from '../seal/seal-lifecycle';
import type { TokenStore } from '../tokens/token-store';
import { PLUGIN_RELOAD_KEY, STORAGE_RESTORED } from './coherence-keys';

/** What this process tells the other processes of its cluster, and how. */
export interface ReplicaAnnouncer {
  /** This process's id among the replicas. */
  readonly id: string;
  announce(key: string): void;
  readonly hasPending: boolean;
  flush(): Promise<void>;
}

export interface CacheCoherenceDeps {
  /** The read cache in front of the store, if this process keeps one. */
  storageCache?: CachedPhysical;
  barrier: Barrier;
  seal: Pick<SealLifecycle, 'followChanges' | 'followResync'>;
  tokens: Pick<TokenStore, 'forgetKeys' | 'load' | 'clear'>;
  namespaces: Pick<NamespaceRegistry, 'load' | 'reloadTables' | 'all'>;
  audit: Pick<AuditDevices, 'load'>;
  leases: Pick<ExpirationManager, 'noteRemoteChange' | 'forgetSchedule'>;
  replication: Pick<Replication, 'load'>;
  /** The backends this process built: the core's own, external plugins', the engine services' it hosts. */
  coreEngines: Pick<EngineHost, 'invalidate' | 'forget'>;
  plugins: Pick<PluginHost, 'invalidate' | 'forget' | 'retainOnly'>;
  localServices: ReadonlyMap<string, Pick<EngineHost, 'invalidate' | 'forget'>>;
  /** The engine services of this build, whose replicas hear of replicated writes over the bus. */
  engineServices(): string[];
  replicas: ReplicaAnnouncer;
  bus: Bus;
  subjectPrefix?: string;
  /** Version of the kv engine mounted at secret/ in a namespace's first mount table. */
  defaultKvVersion: '1' | '2';
}

/**
 * Keeps what this process cached (storage reads, tokens, mount tables, policies, the audit table,
 * engine backends) in step with changes other processes made: a replica's announced writes, a
 * resync after lost contact, a restore, a performance secondary's replicated writes.
 */
export class CacheCoherence {
  constructor(private readonly deps: CacheCoherenceDeps) {}

  /** Reads the cached state from storage: on unseal, before the first request. */
  async load(): Promise<void> {
    await this.deps.tokens.load();
    await this.deps.namespaces.load(this.deps.defaultKvVersion);
    await this.deps.audit.load();
  }

  /** The barrier is closing: what was read through it goes. */
  clear(): void {
    this.deps.storageCache?.clear();
    this.deps.tokens.clear();
  }

  /** Another replica changed `keys`: read them again. */
  async apply(keys: string[]): Promise<void> {
    const { deps } = this;
    deps.storageCache?.invalidate(keys);
    if (!(await deps.seal.followChanges(keys))) return;
    deps.coreEngines.invalidate(keys);
    deps.plugins.invalidate(keys);
    for (const local of deps.localServices.values()) local.invalidate(keys);
    deps.tokens.forgetKeys(keys);
    if (keys.includes(PLUGIN_RELOAD_KEY)) {
      const reload = await createView(deps.barrier, '').getJSON<{ mounts: string[] }>(PLUGIN_RELOAD_KEY);
      for (const uuid of reload?.mounts ?? []) this.dropLocalBackend(uuid);
    }
    if (keys.includes(AUDIT_TABLE_KEY)) await deps.audit.load();
    if (keys.some((key) => key.startsWith(REPLICATION_STORAGE_PREFIX))) await deps.replication.load();
    await deps.leases.noteRemoteChange(keys.filter((key) => key.startsWith(LEASE_KEY_PREFIX)));
    if (keys.includes(NAMESPACES_KEY)) {
      await deps.namespaces.load(deps.defaultKvVersion);
      return;
    }
    const own = (namespace: Namespace) => {
      const prefix = Namespace.storagePrefix(namespace.record);
      return keys.filter((key) => key.startsWith(prefix)).map((key) => key.slice(prefix.length));
    };
    for (const namespace of deps.namespaces.all()) {
      for (const key of own(namespace)) if (key.startsWith(POLICY_PREFIX)) namespace.policies.forget(key.slice(POLICY_PREFIX.length));
    }
    await deps.namespaces.reloadTables((namespace) => own(namespace).some(isMountTableKey));
    // A mount disabled through another replica: its plugin process here stops too.
    deps.plugins.retainOnly(new Set(this.allMounts().map((mount) => mount.uuid)));
  }

  /**
   * Contact with the cluster came back after a gap, during which changes may have been missed: drop
   * every cache and reload from storage (unless the seal lifecycle sealed this replica meanwhile).
   */
  async resync(): Promise<void> {
    this.deps.storageCache?.clear();
    if (await this.deps.seal.followResync()) await this.reloadState();
  }

  /**
   * After a restore (here or on a peer): reloads the cached state and drops every engine backend,
   * in this process and in every engine service, so none serves what it cached before.
   */
  async reloadRestored(before: readonly string[] = this.mountUuids()): Promise<void> {
    await this.reloadState();
    await this.dropBackends(new Set([...before, ...this.mountUuids()]));
  }

  /** Drops the mounts' backends here (plugin processes stopped) and in every engine service; each is built again on its next request. */
  async dropBackends(uuids: Iterable<string>): Promise<void> {
    for (const uuid of uuids) {
      this.dropLocalBackend(uuid);
      await this.deps.bus.publish(mountRemovedSubject(this.deps.subjectPrefix), encodeJson({ uuid }));
    }
  }

  /** Every mount's uuid in every namespace, but the sys/ backend's (which is never rebuilt). */
  mountUuids(): string[] {
    return this.allMounts()
      .filter((mount) => mount.type !== 'system')
      .map((mount) => mount.uuid);
  }

  /**
   * A secondary applied its primary's writes below the barrier: the caches of this process
   * (mount tables, policies, tokens, engine backends here and in the engine services it hosts)
   * and of every replica are reloaded for those keys, or wholly after a resync.
   */
  async replicatedWritesApplied(keys: string[] | undefined): Promise<void> {
    const { replicas } = this.deps;
    if (!keys) {
      await this.reloadRestored();
      replicas.announce(STORAGE_RESTORED);
    } else {
      await this.apply(keys);
      for (const local of this.deps.localServices.values()) local.invalidate(keys);
      await this.invalidateEngineServices(keys);
      for (const key of keys) replicas.announce(key);
    }
    // Outside any request: the other processes of this cluster hear of it now, not with the next request here.
    if (replicas.hasPending) await replicas.flush();
  }

  /** Drops every cache and reads the cached state again from storage. */
  private async reloadState(): Promise<void> {
    this.deps.storageCache?.clear();
    await this.load();
    this.deps.leases.forgetSchedule();
  }

  /** Drops a mount's backend in this process only. */
  private dropLocalBackend(uuid: string): void {
    this.deps.coreEngines.forget(uuid);
    this.deps.plugins.forget(uuid);
    for (const local of this.deps.localServices.values()) local.forget(uuid);
  }

  private allMounts(): MountEntry[] {
    return this.deps.namespaces.all().flatMap((namespace) => namespace.allMounts().map(({ mount }) => mount));
  }

  /**
   * Tells every engine service's replicas (their own processes, or the services other gateway
   * workers host) which mount keys replication wrote, as a service replica tells the others of its
   * own writes: their backends drop what they cached of them.
   */
  private async invalidateEngineServices(keys: string[]): Promise<void> {
    const mountKeys = keys.filter((key) => mountOfKey(key) !== undefined);
    if (mountKeys.length === 0) return;
    const payload = encodeJson({ sender: this.deps.replicas.id, keys: mountKeys } satisfies MountInvalidation);
    await Promise.all(this.deps.engineServices().map((service) => this.deps.bus.publish(mountInvalidationSubject(service, this.deps.subjectPrefix), payload)));
  }
}
