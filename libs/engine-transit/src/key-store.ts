import { ServiceError } from '@svc/http';
import type { StorageView } from '@svc/storage';
import type { StoredKey } from './stored-key';
import { TransitKey } from './transit-key';

const POLICY_PREFIX = 'policy/';
const CACHE_CONFIG_PATH = 'config/cache';
/** Smallest bounded key cache (Vault's rule); 0 means unbounded. */
export const MIN_CACHE_SIZE = 10;

/**
 * How long a cached key is trusted before it is compared with storage again. Replicas share storage
 * but not memory: a rotation, config change or deletion made on another replica becomes visible here
 * within this window. Re-validation reads the stored key and compares its `revision`, keeping the
 * decoded key objects when nothing changed, so encrypt reads storage at most once per key per
 * window rather than once per request. A ciphertext naming a version newer than the cached latest
 * forces an immediate re-validation (see `get`'s `atLeastVersion`), so data encrypted on a replica
 * that has just rotated always decrypts here.
 */
export const CACHE_REVALIDATE_MS = 1000;

interface CacheEntry {
  key: TransitKey | null;
  checkedAt: number;
  /** A re-validation in flight, shared by concurrent requests. */
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
    const entry = this.cache.get(name);
    if (entry && !entry.loading) {
      const fresh = performance.now() - entry.checkedAt < CACHE_REVALIDATE_MS;
      const recentEnough = !entry.key || entry.key.latestVersion >= atLeastVersion;
      if (fresh && recentEnough) {
        if (this.capacity > 0) this.touch(name, entry);
        return entry.key;
      }
    }
    return entry?.loading ?? this.revalidate(storage, name, entry);
  }

  async require(storage: StorageView, name: string, atLeastVersion = 0): Promise<TransitKey> {
    const key = await this.get(storage, name, atLeastVersion);
    if (!key) throw ServiceError.badRequest(`encryption key not found: "${name}"`);
    return key;
  }

  /** Stores a new key unless one exists already (another request or replica won); returns the key kept. */
  async create(storage: StorageView, stored: StoredKey): Promise<{ key: TransitKey; created: boolean }> {
    const outcome = await storage.transaction(async (tx) => {
      await tx.lock(policyPath(stored.name));
      const existing = await tx.get(policyPath(stored.name));
      if (existing) return { stored: parseStored(existing), created: false };
      await tx.put(policyPath(stored.name), serialize(stored));
      return { stored, created: true };
    });
    return { key: this.remember(outcome.stored), created: outcome.created };
  }

  /**
   * Read-modify-write of one key under a storage lock, so concurrent writers on any replica never
   * lose each other's changes. `change` sees the stored state, not the cache.
   */
  async update(storage: StorageView, name: string, change: (stored: StoredKey) => StoredKey): Promise<TransitKey> {
    const stored = await storage.transaction(async (tx) => {
      await tx.lock(policyPath(name));
      const current = await tx.get(policyPath(name));
      if (!current) throw ServiceError.badRequest(`encryption key not found: "${name}"`);
      const previous = parseStored(current);
      const next = { ...change(previous), name, revision: previous.revision + 1 };
      await tx.put(policyPath(name), serialize(next));
      return next;
    });
    return this.remember(stored);
  }

  /** Writes a key whole (restore), replacing any existing one. */
  async replace(storage: StorageView, stored: StoredKey): Promise<TransitKey> {
    const written = await storage.transaction(async (tx) => {
      await tx.lock(policyPath(stored.name));
      const current = await tx.get(policyPath(stored.name));
      const next = { ...stored, revision: (current ? parseStored(current).revision : stored.revision) + 1 };
      await tx.put(policyPath(stored.name), serialize(next));
      return next;
    });
    return this.remember(written);
  }

  async delete(storage: StorageView, name: string): Promise<void> {
    await storage.transaction(async (tx) => {
      await tx.lock(policyPath(name));
      await tx.delete(policyPath(name));
    });
    this.cache.set(name, { key: null, checkedAt: performance.now() });
  }

  /** The stored key read directly, bypassing the cache (background rotation). */
  async readStored(storage: StorageView, name: string): Promise<StoredKey | null> {
    const value = await storage.get(policyPath(name));
    return value ? parseStored(value) : null;
  }

  private revalidate(storage: StorageView, name: string, entry: CacheEntry | undefined): Promise<TransitKey | null> {
    const loading = this.loadCapacity(storage).then(() => this.readStored(storage, name)).then(
      (stored) => {
        const unchanged = stored && entry?.key && entry.key.stored.revision === stored.revision;
        const key = unchanged ? entry.key : stored ? new TransitKey(stored) : null;
        this.cache.set(name, { key, checkedAt: performance.now() });
        this.evict();
        return key;
      },
      (err: unknown) => {
        this.cache.delete(name);
        throw err;
      },
    );
    this.cache.set(name, { key: entry?.key ?? null, checkedAt: entry?.checkedAt ?? 0, loading });
    return loading;
  }

  private async loadCapacity(storage: StorageView): Promise<void> {
    if (!this.capacityLoaded) this.applyCapacity(await this.getCacheSize(storage));
  }

  private remember(stored: StoredKey): TransitKey {
    const key = new TransitKey(stored);
    this.cache.set(stored.name, { key, checkedAt: performance.now() });
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
