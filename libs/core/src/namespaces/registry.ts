import { randomBytes } from 'node:crypto';
import { Mutex } from 'async-mutex';
import { ServiceError } from '@svc/api-contract';
import type { Barrier, StorageView } from '@svc/storage';
import { createView, readJson, writeJson } from '@svc/storage';
import { Namespace, ROOT_NAMESPACE, type NamespaceRecord } from './namespace';

const RECORDS_KEY = 'core/namespaces';
const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;
/** Names that would make paths ambiguous with the API's own top-level paths. */
const RESERVED = new Set(['sys', 'auth', 'cubbyhole', 'identity', 'root']);

/** Full barrier key of the namespace list, for cache invalidation. */
export const NAMESPACES_KEY = RECORDS_KEY;

/**
 * Every namespace of the cluster, by path. A request path is resolved by the longest namespace
 * prefix, so `a/b/secret/x`, header `a` + `b/secret/x` and header `a/b` + `secret/x` are the same.
 */
export class NamespaceRegistry {
  private byPath = new Map<string, Namespace>();
  private readonly view: StorageView;
  /** Loads and changes of the list run one at a time: a load that read the list before a change never undoes it here. */
  private readonly serial = new Mutex();

  constructor(private readonly barrier: Barrier) {
    this.view = createView(barrier, '');
  }

  get root(): Namespace {
    return this.byPath.get('')!;
  }

  /** Reads the namespace list and every namespace's tables; creates the root's built-ins once. */
  load(defaultKvVersion: '1' | '2'): Promise<void> {
    return this.serial.runExclusive(() => this.loadNow(defaultKvVersion));
  }

  private async loadNow(defaultKvVersion: '1' | '2'): Promise<void> {
    const records = (await this.view.getJSON<NamespaceRecord[]>(RECORDS_KEY)) ?? [];
    // Swapped in whole: requests served meanwhile route through the namespaces as they were. A
    // namespace still listed is loaded again in place, its tables in turn with their changes, so a
    // change made here while the load runs is never undone by a table read before it.
    const loaded = new Map<string, Namespace>();
    for (const record of [ROOT_NAMESPACE, ...records]) {
      const current = this.byPath.get(record.path);
      const namespace = current && JSON.stringify(current.record) === JSON.stringify(record) ? current : new Namespace(record, this.barrier);
      await namespace.load();
      if (namespace.secretMounts.size > 0) await namespace.ensureIdentity();
      loaded.set(record.path, namespace);
    }
    this.byPath = loaded;
    if (this.root.secretMounts.size === 0) await this.root.ensureBuiltins(defaultKvVersion);
  }

  /**
   * Reads again the mount tables of the namespaces `changed` picks (another replica changed them),
   * after any load of the whole list under way: a load that read a table before the change would
   * otherwise put it back once the change's reload was done.
   */
  reloadTables(changed: (namespace: Namespace) => boolean): Promise<void> {
    return this.serial.runExclusive(async () => {
      for (const namespace of this.byPath.values()) if (changed(namespace)) await namespace.load();
    });
  }

  get(path: string): Namespace | undefined {
    return this.byPath.get(normalize(path));
  }

  all(): Namespace[] {
    return [...this.byPath.values()];
  }

  /** Splits a full path (namespace path + path inside it) by the longest namespace prefix. */
  resolve(fullPath: string): { namespace: Namespace; path: string } {
    if (this.byPath.size === 1) return { namespace: this.root, path: fullPath };
    let end = fullPath.length;
    for (;;) {
      const slash = fullPath.lastIndexOf('/', end - 1);
      if (slash < 0) return { namespace: this.root, path: fullPath };
      const namespace = this.byPath.get(fullPath.slice(0, slash + 1));
      if (namespace) return { namespace, path: fullPath.slice(slash + 1) };
      end = slash;
    }
  }

  /** Direct children of a namespace. */
  children(parent: Namespace): Namespace[] {
    return this.all().filter((ns) => !ns.isRoot && ns.path.startsWith(parent.path) && ns.path !== parent.path && !ns.path.slice(parent.path.length, -1).includes('/'));
  }

  async create(parent: Namespace, name: string, metadata: Record<string, string>): Promise<Namespace> {
    if (!NAME.test(name) || RESERVED.has(name)) throw ServiceError.badRequest(`invalid namespace name "${name}"`);
    const path = `${parent.path}${name}/`;
    const exists = () => ServiceError.badRequest(`namespace "${path}" already exists`);
    if (this.byPath.has(path)) throw exists();
    const record: NamespaceRecord = { id: randomBytes(4).toString('base64url').replace(/[-_]/g, 'x'), path, custom_metadata: metadata };
    const namespace = new Namespace(record, this.barrier);
    await namespace.ensureBuiltins();
    await this.changeRecords(
      (records) => {
        if (records.some((r) => r.path === path)) throw exists();
        return [...records, record];
      },
      () => this.byPath.set(path, namespace),
    );
    return namespace;
  }

  /** Forgets a namespace (its data is removed by the caller, which also revokes its tokens). */
  async remove(namespace: Namespace): Promise<void> {
    if (namespace.isRoot) throw ServiceError.badRequest('the root namespace cannot be deleted');
    await this.changeRecords(
      (records) => {
        if (records.some((r) => r.path !== namespace.path && r.path.startsWith(namespace.path))) {
          throw ServiceError.badRequest(`namespace "${namespace.path}" has child namespaces; delete them first`);
        }
        return records.filter((r) => r.id !== namespace.record.id);
      },
      () => this.byPath.delete(namespace.path),
    );
  }

  /**
   * Changes the namespace list as storage holds it, under its lock, so namespaces created or deleted
   * at once through several workers or gateways all persist; `committed` updates this process's map.
   */
  private changeRecords(change: (records: NamespaceRecord[]) => NamespaceRecord[], committed: () => void): Promise<void> {
    return this.serial.runExclusive(async () => {
      await this.view.transaction(async (tx) => {
        await tx.lock(RECORDS_KEY);
        await writeJson(tx, RECORDS_KEY, change((await readJson<NamespaceRecord[]>(tx, RECORDS_KEY)) ?? []));
      });
      committed();
    });
  }
}

function normalize(path: string): string {
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  return trimmed ? `${trimmed}/` : '';
}
