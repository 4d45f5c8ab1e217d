import { randomUUID } from 'node:crypto';
import type { MountInfo } from '@svc/framework';
import { ServiceError } from '@svc/http';
import type { StorageView } from '@svc/storage';

/** One row of a mount table, as stored and as returned by sys/mounts (plus path and namespace). */
export interface MountEntry extends MountInfo {
  /** Engine-specific state that is not user-visible (e.g. kv upgrade progress). */
  plugin_version: string;
}

export type MountTableKind = 'secret' | 'auth';

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
 * barrier as one JSON document so a change is a single atomic write. Reads are served from memory.
 */
export class MountTable {
  private entries = new Map<string, MountEntry>();

  constructor(
    private readonly storage: StorageView,
    private readonly storageKey: string,
    readonly kind: MountTableKind,
    readonly namespace: string,
  ) {}

  async load(): Promise<void> {
    const stored = await this.storage.getJSON<MountEntry[]>(this.storageKey);
    // Auth entries stored before mounts named their table get it here.
    this.entries = new Map((stored ?? []).map((e) => [e.path, this.kind === 'auth' ? { ...e, table: 'auth' as const } : e]));
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

  private assertMutable(path: string): void {
    if (RESERVED[this.kind].includes(path)) throw ServiceError.badRequest(`cannot unmount or move "${path}"`);
  }

  private async persist(next: Map<string, MountEntry>): Promise<void> {
    await this.storage.putJSON(this.storageKey, [...next.values()]);
    this.entries = next;
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
