import { createHmac, randomBytes } from 'node:crypto';
import type { StorageView } from '@svc/storage';

/** What the store keeps for a token. The token value itself is never stored, only its salted hash. */
export interface TokenEntry {
  accessor: string;
  policies: string[];
  namespace: string;
  displayName: string;
  meta: Record<string, string>;
  creationTime: number; // unix seconds
  ttl: number; // seconds, 0 = never expires
  type: 'service' | 'batch';
}

const SALT_KEY = 'salt';
const ID_PREFIX = 'id/';
const ACCESSOR_PREFIX = 'accessor/';

export function newTokenValue(): string {
  return `svs.${randomBytes(24).toString('base64url')}`;
}

/**
 * Token storage: entries are keyed by HMAC-SHA256(salt, token), the salt living in the barrier, so
 * neither a storage dump nor a log line holding a storage key reveals a usable token. Lookups are
 * cached in memory because every authenticated request performs one.
 */
export class TokenStore {
  private salt?: Buffer;
  private readonly cache = new Map<string, TokenEntry>();

  constructor(private readonly storage: StorageView) {}

  async load(): Promise<void> {
    this.cache.clear();
    let salt = await this.storage.get(SALT_KEY);
    if (!salt) {
      salt = randomBytes(32);
      await this.storage.put(SALT_KEY, salt);
    }
    this.salt = salt;
  }

  hash(token: string): string {
    if (!this.salt) throw new Error('token store not loaded');
    return createHmac('sha256', this.salt).update(token).digest('hex');
  }

  async create(entry: Omit<TokenEntry, 'accessor' | 'creationTime'>, id = newTokenValue()): Promise<{ id: string; entry: TokenEntry }> {
    const full: TokenEntry = {
      ...entry,
      accessor: randomBytes(18).toString('base64url'),
      creationTime: Math.floor(Date.now() / 1000),
    };
    const key = this.hash(id);
    await this.storage.transaction(async (tx) => {
      await tx.put(ID_PREFIX + key, Buffer.from(JSON.stringify(full)));
      await tx.put(ACCESSOR_PREFIX + full.accessor, Buffer.from(key));
    });
    this.cache.set(key, full);
    return { id, entry: full };
  }

  async lookup(token: string): Promise<TokenEntry | null> {
    const key = this.hash(token);
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    const entry = await this.storage.getJSON<TokenEntry>(ID_PREFIX + key);
    if (entry) this.cache.set(key, entry);
    return entry;
  }
}
