import type { StorageView } from '@svc/storage';
import { CACHE_REVALIDATE_MS } from './key-store';

const KEYS_CONFIG_PATH = 'config/keys';

export interface KeysConfig {
  disable_upsert: boolean;
}

/**
 * The mount-wide `config/keys`. Every encrypt consults it (upsert), so it is cached with the same
 * re-validation window as keys: a change made on another replica is seen within that window.
 */
export class MountSettings {
  private cached?: { value: KeysConfig; checkedAt: number };

  async getKeysConfig(storage: StorageView): Promise<KeysConfig> {
    const cached = this.cached;
    if (cached && performance.now() - cached.checkedAt < CACHE_REVALIDATE_MS) return cached.value;
    const value = (await storage.getJSON<KeysConfig>(KEYS_CONFIG_PATH)) ?? { disable_upsert: false };
    this.cached = { value, checkedAt: performance.now() };
    return value;
  }

  async setKeysConfig(storage: StorageView, value: KeysConfig): Promise<void> {
    await storage.putJSON(KEYS_CONFIG_PATH, value);
    this.cached = { value, checkedAt: performance.now() };
  }
}
