import { randomUUID } from 'node:crypto';
import type { MountInfo } from '@svc/framework';
import { ServiceError } from '@svc/http';
import { LOCAL_MOUNT_TABLES } from '@svc/replication-log';
import type { StorageView } from '@svc/storage';

/** One row of a mount table, as stored and as returned by sys/mounts (plus path and namespace). */
export interface MountEntry extends MountInfo {
  /** Engine-specific state that is not user-visible (e.g. kv upgrade progress). */
  plugin_version: string;
}

export type MountTableKind = 'secret' | 'auth';

/**
 * Where a namespace's mount tables are stored, under its `core/`: `local: true` mounts apart from
 * the others, so that a performance secondary receives the replicated table only and keeps its
 * own local mounts (the local tables are classed local for replication).
 */
export const MOUNT_TABLE_KEYS: Record<MountTableKind, { replicated: string; local: string }> = {
  secret: { replicated: 'mounts', local: LOCAL_MOUNT_TABLES.secret },
  auth: { replicated: 'auth', local: LOCAL_MOUNT_TABLES.auth },
};

/** Whether a key of a namespace's storage (without its prefix) holds one of its mount tables. */
export function isMountTableKey(keyInNamespace: string): boolean {
  return Object.values(MOUNT_TABLE_KEYS).some(({ replicated, local }) => keyInNamespace === `core/${replicated}` || keyInNamespace === `core/${local}`);
}

/** Mounts that exist in every namespace and cannot be disabled or moved. */
const RESERVED: Record<MountTableKind, string[]> = {
  secret: ['sys/', 'cubbyhole/', 'identity/'],
  auth: ['token/'],
};

export interface MountRequest {
  path: string;
  type: string;
  description?: string;
  config?: Partial<MountInfo['config']>;
  options?: Record<string, string>;
  local?: boolean;
  seal_wrap?: boolean;
  plugin_version?: string;
  external?: boolean;
}

export function normalizeMountPath(path: string): string {
  const trimmed = path.replace(/^\/+/, '').replace(/\/+$/, '');
  if (trimmed === '') throw ServiceError.badRequest('mount path must not be empty');
  if (trimmed.split('/').some((s) => s === '' || s === '.' || s === '..' || s.endsWith('.'))) {
    throw ServiceError.badRequest(`invalid mount path "${path}"`);
  }
  return `${trimmed}/`;
}

/**
 * The mounts of one kind (secret engines or auth methods) in one namespace, persisted through the
 * barrier as two JSON documents (the replicated mounts and the local ones, MOUNT_TABLE_KEYS); a
 * change touches one entry, so it is a single atomic write. Reads are served from memory.
 */
export class MountTable {
  private entries = new Map<string, MountEntry>();
  /**
   * Whether one mount's path is a prefix of another's. New mounts never nest (assertFree), so the
   * first mount found from the left is the longest match; a table stored otherwise is matched from
   * the right.
   */
  private nested = false;
  /** The two tables as last read or written (JSON), to write only the one a change touches. */
  private stored = { replicated: '', local: '' };

  /** `storage`: the namespace's `core/`. */
  constructor(
    private readonly storage: StorageView,
    readonly kind: MountTableKind,
    readonly namespace: string,
  ) {}

  async load(): Promise<void> {
    const keys = MOUNT_TABLE_KEYS[this.kind];
    const [replicated, local] = await Promise.all([this.storage.getJSON<MountEntry[]>(keys.replicated), this.storage.getJSON<MountEntry[]>(keys.local)]);
    // Local entries stored in the replicated table before the local one existed move there with the next change.
    const stored = [...(replicated ?? []), ...(local ?? [])];
    // Auth entries stored before mounts named their table get it here.
    this.replaceEntries(new Map(stored.map((e) => [e.path, this.kind === 'auth' ? { ...e, table: 'auth' as const } : e])));
    this.stored = { replicated: JSON.stringify(replicated ?? []), local: JSON.stringify(local ?? []) };
  }

  get size(): number {
    return this.entries.size;
  }

  list(): MountEntry[] {
    return [...this.entries.values()].sort((a, b) => a.path.localeCompare(b.path));
  }

  get(path: string): MountEntry | undefined {
    return this.entries.get(path);
  }

  /** Longest mount whose path is a prefix of `path`. */
  match(path: string): MountEntry | undefined {
    if (!this.nested) {
      for (let slash = path.indexOf('/'); slash >= 0; slash = path.indexOf('/', slash + 1)) {
        const hit = this.entries.get(path.slice(0, slash + 1));
        if (hit) return hit;
      }
      return undefined;
    }
    let end = path.length;
    for (;;) {
      const slash = path.lastIndexOf('/', end - 1);
      if (slash < 0) return undefined;
      const hit = this.entries.get(path.slice(0, slash + 1));
      if (hit) return hit;
      end = slash;
    }
  }

  async mount(req: MountRequest, defaults: { default_lease_ttl: number; max_lease_ttl: number }): Promise<MountEntry> {
    const path = normalizeMountPath(req.path);
    if (this.kind === 'secret' && path.startsWith('auth/')) throw ServiceError.badRequest('cannot mount under auth/');
    this.assertFree(path);
    const entry: MountEntry = {
      path,
      type: req.type,
      uuid: randomUUID(),
      accessor: `${req.type}_${randomUUID().slice(0, 8)}`,
      namespace: this.namespace,
      description: req.description ?? '',
      config: {
        default_lease_ttl: req.config?.default_lease_ttl ?? 0,
        max_lease_ttl: req.config?.max_lease_ttl ?? 0,
        ...stripUndefined(req.config ?? {}),
      },
      options: req.options ?? {},
      local: req.local ?? false,
      seal_wrap: req.seal_wrap ?? false,
      plugin_version: req.plugin_version ?? '',
      ...(this.kind === 'auth' ? { table: 'auth' as const } : {}),
      ...(req.external ? { external: true } : {}),
    };
    assertTtls(entry.config, defaults);
    await this.persist(new Map(this.entries).set(path, entry));
    return entry;
  }

  /** Adds a built-in mount (sys/, token/, cubbyhole/) the first time a table is created. */
  async ensure(req: MountRequest): Promise<void> {
    if (!this.entries.has(req.path)) await this.mount(req, { default_lease_ttl: 0, max_lease_ttl: 0 });
  }

  async unmount(path: string): Promise<MountEntry> {
    const normalized = normalizeMountPath(path);
    this.assertMutable(normalized);
    const entry = this.entries.get(normalized);
    if (!entry) throw ServiceError.badRequest(`no mount at "${normalized}"`);
    const next = new Map(this.entries);
    next.delete(normalized);
    await this.persist(next);
    return entry;
  }

  async tune(
    path: string,
    changes: { config?: Partial<MountInfo['config']>; description?: string; options?: Record<string, string> },
    defaults: { default_lease_ttl: number; max_lease_ttl: number },
  ): Promise<MountEntry> {
    const entry = this.entries.get(normalizeMountPath(path));
    if (!entry) throw ServiceError.badRequest(`no mount at "${path}"`);
    const updated: MountEntry = {
      ...entry,
      description: changes.description ?? entry.description,
      config: { ...entry.config, ...stripUndefined(changes.config ?? {}) },
      options: changes.options ? { ...entry.options, ...changes.options } : entry.options,
    };
    assertTtls(updated.config, defaults);
    await this.persist(new Map(this.entries).set(updated.path, updated));
    return updated;
  }

  /** Moves a mount within this table; its uuid (and so its data) stays the same. */
  async remount(from: string, to: string): Promise<MountEntry> {
    const source = normalizeMountPath(from);
    const target = normalizeMountPath(to);
    this.assertMutable(source);
    const entry = this.entries.get(source);
    if (!entry) throw ServiceError.badRequest(`no mount at "${source}"`);
    this.assertFree(target);
    const next = new Map(this.entries);
    next.delete(source);
    next.set(target, { ...entry, path: target });
    await this.persist(next);
    return next.get(target)!;
  }

  private assertFree(path: string): void {
    for (const existing of this.entries.keys()) {
      if (existing.startsWith(path) || path.startsWith(existing)) {
        throw ServiceError.badRequest(`path is already in use at ${existing}`);
      }
    }
  }

  private replaceEntries(entries: Map<string, MountEntry>): void {
    // Sorted, a path and one that extends it have only its other extensions between them.
    const paths = [...entries.keys()].sort();
    this.nested = paths.some((path, i) => i > 0 && path.startsWith(paths[i - 1]));
    this.entries = entries;
  }

  private assertMutable(path: string): void {
    if (RESERVED[this.kind].includes(path)) throw ServiceError.badRequest(`cannot unmount or move "${path}"`);
  }

  /** Writes the table (replicated or local) whose entries changed: one, or both when an entry moves between them. */
  private async persist(next: Map<string, MountEntry>): Promise<void> {
    const keys = MOUNT_TABLE_KEYS[this.kind];
    const entries = [...next.values()];
    const replicated = entries.filter((entry) => !entry.local);
    const local = entries.filter((entry) => entry.local);
    const text = { replicated: JSON.stringify(replicated), local: JSON.stringify(local) };
    // The local table first: an entry moving out of the replicated one is in one table or both, never in neither.
    if (text.local !== this.stored.local) await this.storage.putJSON(keys.local, local);
    this.stored.local = text.local;
    if (text.replicated !== this.stored.replicated) await this.storage.putJSON(keys.replicated, replicated);
    this.stored.replicated = text.replicated;
    this.replaceEntries(next);
  }
}

function stripUndefined<T extends object>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function assertTtls(config: MountInfo['config'], system: { default_lease_ttl: number; max_lease_ttl: number }): void {
  const max = config.max_lease_ttl || system.max_lease_ttl;
  if (max > 0 && config.default_lease_ttl > max) {
    throw ServiceError.badRequest('default_lease_ttl cannot be greater than max_lease_ttl');
  }
  if (system.max_lease_ttl > 0 && config.max_lease_ttl > system.max_lease_ttl) {
    throw ServiceError.badRequest('max_lease_ttl cannot be greater than the system max lease TTL');
  }
}
