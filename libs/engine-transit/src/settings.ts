import type { StorageView } from '@svc/storage';
import { CACHE_REVALIDATE_MS, settle } from './key-store';

export const KEYS_CONFIG_PATH = 'config/keys';

export interface KeysConfig {
  disable_upsert: boolean;
}

/**
 * The mount-wide `config/keys`. Every encrypt consults it (upsert), so it is cached under the same
 * lease as keys (see CACHE_REVALIDATE_MS): a change answers once every replica sees it.
 */
export class MountSettings {
  private cached?: { value: KeysConfig; checkedAt: number };

  async getKeysConfig(storage: StorageView): Promise<KeysConfig> {
    const cached = this.cached;
    const startedAt = performance.now();
    if (cached && startedAt - cached.checkedAt < CACHE_REVALIDATE_MS) return cached.value;
    const value = (await storage.getJSON<KeysConfig>(KEYS_CONFIG_PATH)) ?? { disable_upsert: false };
    this.cached = { value, checkedAt: startedAt };
    return value;
  }

  /** Drops the cached settings another replica changed. */
  forget(): void {
    this.cached = undefined;
  }

  async setKeysConfig(storage: StorageView, value: KeysConfig): Promise<void> {
    const startedAt = performance.now();
    await storage.putJSON(KEYS_CONFIG_PATH, value);
    this.cached = { value, checkedAt: startedAt };
    await settle();
  }
}
