import { randomUUID } from 'node:crypto';
import { Mutex } from 'async-mutex';
import { normalizeMountPath, type MountInfo } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
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

/**
 * The mounts of one kind (secret engines or auth methods) in one namespace, persisted through the
 * barrier as two JSON documents (the replicated mounts and the local ones, MOUNT_TABLE_KEYS). Reads
 * are served from memory. A change is made in a storage transaction under the table's lock, to the
 * table as storage holds it, so changes made at once through several workers or gateways all
 * persist; loads and changes in one process run one at a time, so a load that read the table
 * before a change never replaces the changed table.
 */
export class MountTable {
  private entries = new Map<string, MountEntry>();
  /**
   * Whether one mount's path is a prefix of another's. New mounts never nest (assertFree), so the
   * first mount found from the left is the longest match; a table stored otherwise is matched from
   * the right.
   */
  private nested = false;
  private readonly serial = new Mutex();

  /** `storage`: the namespace's `core/`. */
  constructor(
    private readonly storage: StorageView,
    readonly kind: MountTableKind,
    readonly namespace: string,
  ) {}

  load(): Promise<void> {
    return this.serial.runExclusive(async () => {
      const keys = MOUNT_TABLE_KEYS[this.kind];
      const [replicated, local] = await Promise.all([this.storage.get(keys.replicated), this.storage.get(keys.local)]);
      this.replaceEntries(this.decode(replicated, local));
    });
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
    const entry = this.newEntry(path, req);
    assertTtls(entry.config, defaults);
    return this.change((entries) => {
      assertFree(entries, path);
      return { next: new Map(entries).set(path, entry), result: entry };
    });
  }

  /** Adds a built-in mount (sys/, token/, cubbyhole/) the first time a table is created. */
  async ensure(req: MountRequest): Promise<void> {
    if (this.entries.has(req.path)) return;
    const entry = this.newEntry(req.path, req);
    await this.change((entries) => ({ next: entries.has(req.path) ? entries : new Map(entries).set(req.path, entry), result: undefined }));
  }

  async unmount(path: string): Promise<MountEntry> {
    const normalized = normalizeMountPath(path);
    this.assertMutable(normalized);
    return this.change((entries) => {
      const entry = entries.get(normalized);
      if (!entry) throw ServiceError.badRequest(`no mount at "${normalized}"`);
      const next = new Map(entries);
      next.delete(normalized);
      return { next, result: entry };
    });
  }

  async tune(
    path: string,
    changes: { config?: Partial<MountInfo['config']>; description?: string; options?: Record<string, string> },
    defaults: { default_lease_ttl: number; max_lease_ttl: number },
  ): Promise<MountEntry> {
    const normalized = normalizeMountPath(path);
    return this.change((entries) => {
      const entry = entries.get(normalized);
      if (!entry) throw ServiceError.badRequest(`no mount at "${path}"`);
      const updated: MountEntry = {
        ...entry,
        description: changes.description ?? entry.description,
        config: { ...entry.config, ...stripUndefined(changes.config ?? {}) },
        options: changes.options ? { ...entry.options, ...changes.options } : entry.options,
      };
      assertTtls(updated.config, defaults);
      return { next: new Map(entries).set(updated.path, updated), result: updated };
    });
  }

  /** Moves a mount within this table; its uuid (and so its data) stays the same. */
  async remount(from: string, to: string): Promise<MountEntry> {
    const source = normalizeMountPath(from);
    const target = normalizeMountPath(to);
    this.assertMutable(source);
    return this.change((entries) => {
      const entry = entries.get(source);
      if (!entry) throw ServiceError.badRequest(`no mount at "${source}"`);
      assertFree(entries, target);
      const next = new Map(entries);
      next.delete(source);
      const moved = { ...entry, path: target };
      next.set(target, moved);
      return { next, result: moved };
    });
  }

  private newEntry(path: string, req: MountRequest): MountEntry {
    return {
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
  }

  private decode(replicated: Buffer | null, local: Buffer | null): Map<string, MountEntry> {
    // Local entries stored in the replicated table before the local one existed move there with the next change.
    const stored = [...parseTable(replicated), ...parseTable(local)];
    // Auth entries stored before mounts named their table get it here.
    return new Map(stored.map((e) => [e.path, this.kind === 'auth' ? { ...e, table: 'auth' as const } : e]));
  }

  /**
   * Applies a change to the table as storage holds it, under the table's lock, and writes the
   * table (replicated or local) whose entries changed: one, or both when an entry moves between them.
   */
  private change<T>(apply: (entries: Map<string, MountEntry>) => { next: Map<string, MountEntry>; result: T }): Promise<T> {
    return this.serial.runExclusive(async () => {
      const keys = MOUNT_TABLE_KEYS[this.kind];
      const { next, result } = await this.storage.transaction(async (tx) => {
        await tx.lock(keys.replicated);
        const [replicated, local] = await Promise.all([tx.get(keys.replicated), tx.get(keys.local)]);
        const changed = apply(this.decode(replicated, local));
        const entries = [...changed.next.values()];
        const text = { replicated: JSON.stringify(entries.filter((entry) => !entry.local)), local: JSON.stringify(entries.filter((entry) => entry.local)) };
        // The local table first: an entry moving out of the replicated one is in one table or both, never in neither.
        if (text.local !== (local?.toString('utf8') ?? '[]')) await tx.put(keys.local, Buffer.from(text.local, 'utf8'));
        if (text.replicated !== (replicated?.toString('utf8') ?? '[]')) await tx.put(keys.replicated, Buffer.from(text.replicated, 'utf8'));
        return changed;
      });
      this.replaceEntries(next);
      return result;
    });
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
}

function parseTable(stored: Buffer | null): MountEntry[] {
  return stored === null ? [] : (JSON.parse(stored.toString('utf8')) as MountEntry[]);
}

function assertFree(entries: ReadonlyMap<string, MountEntry>, path: string): void {
  for (const existing of entries.keys()) {
    if (existing.startsWith(path) || path.startsWith(existing)) {
      throw ServiceError.badRequest(`path is already in use at ${existing}`);
    }
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
