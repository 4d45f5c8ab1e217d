import { ServiceError } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';
import type { StoredKey } from './stored-key';
import { TransitKey } from './transit-key';

export const POLICY_PREFIX = 'policy/';
const CACHE_CONFIG_PATH = 'config/cache';
/** Smallest bounded key cache (Vault's rule); 0 means unbounded. */
export const MIN_CACHE_SIZE = 10;

/**
 * How long a cached key is trusted before it is compared with storage again. Replicas share storage
 * but not memory, so the cache is a lease: a key read at time t is used until t + this window, and
 * every write to a key (rotate, config, trim, delete, restore…) answers only after waiting this window
 * past its commit (`settle`). By the time the caller sees the write succeed, no replica trusts a copy
 * read before it, so the next request on any replica uses the new state (encrypt after rotate gives
 * the new version). Re-validation compares the stored `revision` and keeps the decoded key objects
 * when nothing changed, so encrypt reads storage at most once per key per window. Missing keys are
 * never cached, so a key created on one replica is usable on every other at once.
 */
export const CACHE_REVALIDATE_MS = 200;

/** Resolves once every replica's cached copy read before now has expired (see CACHE_REVALIDATE_MS). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, CACHE_REVALIDATE_MS));
}

interface CacheEntry {
  key: TransitKey | null;
  /** When the storage read that produced `key` (or `loading`) started: the lease runs from then. */
  checkedAt: number;
  /** A re-validation in flight, shared by concurrent requests while its lease is valid. */
  loading?: Promise<TransitKey | null>;
}

export class KeyStore {
  private readonly cache = new Map<string, CacheEntry>();
  /** 0 means unlimited; otherwise least recently used keys are dropped beyond this many. */
  private capacity = 0;
  /** The stored cache size is read with the first key this process loads. */
  private capacityLoaded = false;

  async getCacheSize(storage: StorageView): Promise<number> {
    return (await storage.getJSON<{ size: number }>(CACHE_CONFIG_PATH))?.size ?? 0;
  }

  /**
   * Sets the cache size (cache-config). It applies to this replica at once and to other replicas when
   * they next start, as in Vault.
   */
  async setCacheSize(storage: StorageView, size: number): Promise<void> {
    if (size !== 0 && size < MIN_CACHE_SIZE) {
      throw ServiceError.badRequest(`size must be 0 (unlimited) or at least ${MIN_CACHE_SIZE}`);
    }
    await storage.putJSON(CACHE_CONFIG_PATH, { size });
    this.applyCapacity(size);
  }

  private applyCapacity(size: number): void {
    this.capacity = size;
    this.capacityLoaded = true;
    this.evict();
  }

  async list(storage: StorageView): Promise<string[]> {
    return storage.list(POLICY_PREFIX);
  }

  /**
   * The key, from the cache while it is fresh. `atLeastVersion` re-validates a cached key whose latest
   * version is older (another replica rotated it).
   */
  async get(storage: StorageView, name: string, atLeastVersion = 0): Promise<TransitKey | null> {
    const key = this.fresh(name, atLeastVersion);
    if (key) return key;
    const entry = this.cache.get(name);
    if (entry?.loading && performance.now() - entry.checkedAt < CACHE_REVALIDATE_MS) return entry.loading;
    return this.revalidate(storage, name, entry);
  }

  /** `get` answered from the cache without a promise (the request path's usual case), else undefined. */
  fresh(name: string, atLeastVersion = 0): TransitKey | undefined {
    const entry = this.cache.get(name);
    // While a re-validation is in flight, the key it replaces may be out of date: wait for it.
    if (!entry?.key || entry.loading || entry.key.latestVersion < atLeastVersion || performance.now() - entry.checkedAt >= CACHE_REVALIDATE_MS) return undefined;
    if (this.capacity > 0) this.touch(name, entry);
    return entry.key;
  }

  async require(storage: StorageView, name: string, atLeastVersion = 0): Promise<TransitKey> {
    const key = await this.get(storage, name, atLeastVersion);
    if (!key) throw ServiceError.badRequest(`encryption key not found: "${name}"`);
    return key;
  }

  /** Stores a new key unless one exists already (another request or replica won); returns the key kept. */
  async create(storage: StorageView, stored: StoredKey): Promise<{ key: TransitKey; created: boolean }> {
    const startedAt = performance.now();
    const outcome = await storage.transaction(async (tx) => {
      await tx.lock(policyPath(stored.name));
      const existing = await tx.get(policyPath(stored.name));
      if (existing) return { stored: parseStored(existing), created: false };
      await tx.put(policyPath(stored.name), serialize(stored));
      return { stored, created: true };
    });
    return { key: this.remember(outcome.stored, startedAt), created: outcome.created };
  }

  /**
   * Read-modify-write of one key under a storage lock, so concurrent writers on any replica never
   * lose each other's changes. `change` sees the stored state, not the cache. Answers once every
   * replica sees the change.
   */
  async update(storage: StorageView, name: string, change: (stored: StoredKey) => StoredKey): Promise<TransitKey> {
    const startedAt = performance.now();
    const stored = await storage.transaction(async (tx) => {
      await tx.lock(policyPath(name));
      const current = await tx.get(policyPath(name));
      if (!current) throw ServiceError.badRequest(`encryption key not found: "${name}"`);
      const previous = parseStored(current);
      const next = { ...change(previous), name, revision: previous.revision + 1 };
      await tx.put(policyPath(name), serialize(next));
      return next;
    });
    await settle();
    return this.remember(stored, startedAt);
  }

  /** Writes a key whole (restore), replacing any existing one; answers once every replica sees it. */
  async replace(storage: StorageView, stored: StoredKey): Promise<TransitKey> {
    const startedAt = performance.now();
    const written = await storage.transaction(async (tx) => {
      await tx.lock(policyPath(stored.name));
      const current = await tx.get(policyPath(stored.name));
      const next = { ...stored, revision: (current ? parseStored(current).revision : stored.revision) + 1 };
      await tx.put(policyPath(stored.name), serialize(next));
      return next;
    });
    await settle();
    return this.remember(written, startedAt);
  }

  /** Deletes a key; answers once no replica uses it any more. */
  async delete(storage: StorageView, name: string): Promise<void> {
    await storage.transaction(async (tx) => {
      await tx.lock(policyPath(name));
      await tx.delete(policyPath(name));
    });
    this.cache.delete(name);
    await settle();
  }

  /** Drops the cached copy of a key another replica changed. */
  forget(name: string): void {
    this.cache.delete(name);
  }

  /** The stored key read directly, bypassing this store's cache of keys. */
  async readStored(storage: StorageView, name: string): Promise<StoredKey | null> {
    const value = await storage.get(policyPath(name));
    return value ? parseStored(value) : null;
  }

  /**
   * The key as storage itself holds it, past every cache (this store's and a read cache below the
   * barrier, which may not hold another replica's latest write yet): what a rotation under the
   * key's lock decides on.
   */
  async readFromStorage(storage: StorageView, name: string): Promise<StoredKey | null> {
    const value = await storage.transaction((tx) => tx.get(policyPath(name)));
    return value ? parseStored(value) : null;
  }

  private revalidate(storage: StorageView, name: string, entry: CacheEntry | undefined): Promise<TransitKey | null> {
    const startedAt = performance.now();
    const loading = this.loadCapacity(storage).then(() => this.readStored(storage, name)).then(
      (stored) => {
        const unchanged = stored && entry?.key && entry.key.stored.revision === stored.revision;
        const key = unchanged ? entry.key : stored ? new TransitKey(stored) : null;
        if (key) this.cache.set(name, { key, checkedAt: startedAt });
        else this.cache.delete(name);
        this.evict();
        return key;
      },
      (err: unknown) => {
        this.cache.delete(name);
        throw err;
      },
    );
    this.cache.set(name, { key: entry?.key ?? null, checkedAt: startedAt, loading });
    return loading;
  }

  private async loadCapacity(storage: StorageView): Promise<void> {
    if (!this.capacityLoaded) this.applyCapacity(await this.getCacheSize(storage));
  }

  /** Caches the state this replica has just written; `startedAt` precedes the write's transaction. */
  private remember(stored: StoredKey, startedAt: number): TransitKey {
    const key = new TransitKey(stored);
    this.cache.set(stored.name, { key, checkedAt: startedAt });
    this.evict();
    return key;
  }

  private touch(name: string, entry: CacheEntry): void {
    this.cache.delete(name);
    this.cache.set(name, entry);
  }

  private evict(): void {
    if (this.capacity <= 0) return;
    for (const name of this.cache.keys()) {
      if (this.cache.size <= this.capacity) break;
      this.cache.delete(name);
    }
  }
}

function policyPath(name: string): string {
  return POLICY_PREFIX + name;
}

function serialize(stored: StoredKey): Buffer {
  return Buffer.from(JSON.stringify(stored), 'utf8');
}

function parseStored(value: Buffer): StoredKey {
  return JSON.parse(value.toString('utf8')) as StoredKey;
}
