import type { Barrier, StorageView } from '@svc/storage';
import { createView } from '@svc/storage';
import { MountTable, type MountEntry } from '../mounts/mount-table';
import { PolicyStore } from '../policies/policy-store';

export interface NamespaceRecord {
  id: string;
  /** '' for the root namespace, else "a/" or "a/b/". */
  path: string;
  custom_metadata: Record<string, string>;
}

export const ROOT_NAMESPACE: NamespaceRecord = { id: 'root', path: '', custom_metadata: {} };

export interface Route {
  mount: MountEntry;
  table: MountTable;
  /** Path below the mount. */
  path: string;
}

/**
 * One namespace: its own mounts, auth methods and policies, stored under its own prefix of the
 * barrier (nothing for root, `namespaces/<id>/` otherwise), so deleting it deletes one subtree.
 */
export class Namespace {
  readonly storage: StorageView;
  readonly secretMounts: MountTable;
  readonly authMounts: MountTable;
  readonly policies: PolicyStore;

  constructor(
    readonly record: NamespaceRecord,
    barrier: Barrier,
  ) {
    this.storage = createView(barrier, Namespace.storagePrefix(record));
    const core = this.storage.sub('core/');
    this.secretMounts = new MountTable(core, 'secret', record.path);
    this.authMounts = new MountTable(core, 'auth', record.path);
    this.policies = new PolicyStore(this.storage);
  }

  static storagePrefix(record: NamespaceRecord): string {
    return record.id === ROOT_NAMESPACE.id ? '' : `namespaces/${record.id}/`;
  }

  get path(): string {
    return this.record.path;
  }

  get isRoot(): boolean {
    return this.record.id === ROOT_NAMESPACE.id;
  }

  async load(): Promise<void> {
    await this.secretMounts.load();
    await this.authMounts.load();
    this.policies.clear();
  }

  /** Built-in mounts every namespace has, and its default policy. */
  async ensureBuiltins(defaultKvVersion?: '1' | '2'): Promise<void> {
    await this.secretMounts.ensure({ path: 'sys/', type: 'system', description: 'system endpoints used for control, policy and debugging' });
    await this.secretMounts.ensure({ path: 'cubbyhole/', type: 'cubbyhole', description: 'per-token private secret storage' });
    await this.ensureIdentity();
    if (this.isRoot && defaultKvVersion) {
      await this.secretMounts.ensure({ path: 'secret/', type: 'kv', description: 'key/value secret storage', options: { version: defaultKvVersion } });
    }
    await this.authMounts.ensure({ path: 'token/', type: 'token', description: 'token based credentials' });
    await this.policies.ensureDefault();
  }

  /** The identity/ mount, which namespaces created before the identity store existed lack. */
  async ensureIdentity(): Promise<void> {
    await this.secretMounts.ensure({ path: 'identity/', type: 'identity', description: 'identity store: entities and their aliases' });
  }

  /** Longest-prefix match of a path (relative to this namespace) in its mount tables. */
  route(path: string): Route | undefined {
    const isAuth = path.startsWith('auth/');
    const table = isAuth ? this.authMounts : this.secretMounts;
    const inTable = isAuth ? path.slice('auth/'.length) : path;
    const mount = table.match(inTable);
    return mount ? { mount, table, path: inTable.slice(mount.path.length) } : undefined;
  }

  allMounts(): { mount: MountEntry; prefix: string }[] {
    return [
      ...this.secretMounts.list().map((mount) => ({ mount, prefix: '' })),
      ...this.authMounts.list().map((mount) => ({ mount, prefix: 'auth/' })),
    ];
  }
}
