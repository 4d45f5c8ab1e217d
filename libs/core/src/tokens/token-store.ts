import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { AuthResponse } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { InvalidationEpoch, type StorageView, type Transaction } from '@svc/storage';

/** What the store keeps for a token. The token's value is never stored, only its salted hash. */
export interface TokenEntry {
  accessor: string;
  /** Accessor of the parent token; '' for an orphan. */
  parent: string;
  policies: string[];
  meta: Record<string, string> | null;
  displayName: string;
  /** Uses left; 0 = unlimited. */
  numUses: number;
  /** Unix seconds. */
  creationTime: number;
  lastRenewalTime: number;
  /** Seconds from the last renewal; 0 = never expires. */
  ttl: number;
  explicitMaxTtl: number;
  period: number;
  renewable: boolean;
  type: 'service' | 'batch';
  /** Namespace path ('' for root, else "a/b/"). */
  namespace: string;
  role: string;
  /** Auth path that created it, e.g. "auth/token/create". */
  path: string;
  entityId: string;
  /** Internal: the token was created as a wrapping token for a response. */
  wrapping?: boolean;
  /** Client addresses (CIDR blocks) the token may be used from; absent: any. */
  boundCidrs?: string[];
  /** A token a login issued: the auth method's mount (by accessor) and its auth, asked again on renewal. */
  login?: LoginRecord;
}

export interface LoginRecord {
  mountAccessor: string;
  auth: AuthResponse;
}

export interface TokenRole {
  name: string;
  allowed_policies: string[];
  disallowed_policies: string[];
  allowed_policies_glob: string[];
  disallowed_policies_glob: string[];
  orphan: boolean;
  renewable: boolean;
  path_suffix: string;
  token_explicit_max_ttl: number;
  token_period: number;
  token_type: 'service' | 'batch' | 'default-service' | 'default-batch';
  token_ttl: number;
  token_max_ttl: number;
  token_no_default_policy: boolean;
  token_num_uses: number;
  allowed_entity_aliases: string[];
}

export const SERVICE_PREFIX = 'svs.';
const TOKEN_RANDOM_BYTES = 24;
/** Length of every generated service token: the prefix and the base64url of its random bytes. */
export const SERVICE_TOKEN_LENGTH = SERVICE_PREFIX.length + Math.ceil((TOKEN_RANDOM_BYTES * 4) / 3);
export const BATCH_PREFIX = 'svb.';

const SALT_KEY = 'salt';
const BATCH_KEY = 'batch-key';
const ID = 'id/';
const ACCESSOR = 'accessor/';
const PARENT = 'parent/';
const ROLE = 'roles/';
const CACHE_LIMIT = 10_000;

export function expireTime(entry: TokenEntry): number | undefined {
  return entry.ttl > 0 ? entry.lastRenewalTime + entry.ttl : undefined;
}

export function remainingTtl(entry: TokenEntry, now = nowSeconds()): number {
  const expires = expireTime(entry);
  return expires === undefined ? 0 : Math.max(0, expires - now);
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/**
 * Token storage. Service tokens are keyed by HMAC-SHA256(salt, token), the salt living in the
 * barrier, so neither a storage dump nor a log line holding a storage key reveals a usable token.
 * Batch tokens are not stored at all: the token is the entry, encrypted with a key kept in the
 * barrier (AES-256-GCM), as Vault does. Lookups are cached by hash, since every authenticated
 * request performs one; the cache drops entries when any replica writes them (ReplicaSync).
 */
export class TokenStore {
  private salt?: Buffer;
  private batchKey?: Buffer;
  private readonly cache = new Map<string, TokenEntry>();
  /** A lookup that met an invalidation (a revocation, say) uses what it read but does not cache it. */
  private readonly invalidations = new InvalidationEpoch();
  private readonly hashes = new Map<string, string>();

  constructor(private readonly storage: StorageView) {}

  async load(): Promise<void> {
    this.forgetAll();
    this.hashes.clear();
    this.salt = await this.secretBytes(SALT_KEY);
    this.batchKey = await this.secretBytes(BATCH_KEY);
  }

  /** Sealing: forget the key material and every cached token. */
  clear(): void {
    this.forgetAll();
    this.hashes.clear();
    this.salt = undefined;
    this.batchKey = undefined;
  }

  /** Storage key prefix (inside the barrier) of token entries, for cache invalidation. */
  static readonly ENTRY_PREFIX = `sys/token/${ID}`;

  hash(token: string): string {
    if (!this.salt) throw ServiceError.sealed();
    // The HMAC is a fixed function of the token: remembered for the tokens in use (bounded),
    // it is computed once per token instead of once per request.
    let key = this.hashes.get(token);
    if (key === undefined) {
      key = createHmac('sha256', this.salt).update(token).digest('hex');
      if (this.hashes.size >= CACHE_LIMIT) this.hashes.delete(this.hashes.keys().next().value!);
      this.hashes.set(token, key);
    }
    return key;
  }

  /** Drops cached entries another replica changed (keys are full barrier paths). */
  forgetKeys(keys: string[]): void {
    this.invalidations.advance();
    for (const key of keys) if (key.startsWith(TokenStore.ENTRY_PREFIX)) this.cache.delete(key.slice(TokenStore.ENTRY_PREFIX.length));
  }

  private forgetAll(): void {
    this.invalidations.advance();
    this.cache.clear();
  }

  /** After a change of an entry commits: lookups under way may hold the entry as it was. */
  private forget(key: string): void {
    this.invalidations.advance();
    this.cache.delete(key);
  }

  async create(entry: Omit<TokenEntry, 'accessor'>, id?: string): Promise<{ id: string; entry: TokenEntry }> {
    if (entry.type === 'batch') {
      const full: TokenEntry = { ...entry, accessor: '' };
      return { id: this.sealBatch(full), entry: full };
    }
    const token = id ?? `${SERVICE_PREFIX}${randomBytes(TOKEN_RANDOM_BYTES).toString('base64url')}`;
    const full: TokenEntry = { ...entry, accessor: randomBytes(18).toString('base64url') };
    const key = this.hash(token);
    await this.storage.transaction(async (tx) => {
      if (await tx.get(ID + key)) throw ServiceError.badRequest('a token with that ID already exists');
      await tx.put(ID + key, encode(full));
      await tx.put(ACCESSOR + full.accessor, Buffer.from(key));
      if (full.parent) await tx.put(`${PARENT}${full.parent}/${full.accessor}`, Buffer.alloc(0));
    });
    this.remember(key, full);
    return { id: token, entry: full };
  }

  /** The live entry of a token value, or null (unknown, revoked, expired). */
  async lookup(token: string): Promise<TokenEntry | null> {
    const known = this.cached(token);
    if (known !== undefined) return known;
    const key = this.hash(token);
    const mark = this.invalidations.mark;
    const entry = await this.storage.getJSON<TokenEntry>(ID + key);
    if (!entry) return null;
    if (this.invalidations.unchangedSince(mark)) this.remember(key, entry);
    return isExpired(entry) ? null : entry;
  }

  /** `lookup` answered from memory (the request path's usual case); undefined when storage must say. */
  cached(token: string): TokenEntry | null | undefined {
    if (token.startsWith(BATCH_PREFIX)) return this.openBatch(token);
    const entry = this.cache.get(this.hash(token));
    if (!entry) return undefined;
    return isExpired(entry) ? null : entry;
  }

  /**
   * A live token by accessor. `duringLastUse` also returns a token whose last use is being spent
   * by the current request (it is revoked when that request ends).
   */
  async lookupAccessor(accessor: string, duringLastUse = false): Promise<{ key: string; entry: TokenEntry } | null> {
    if (!accessor || accessor.includes('/')) return null;
    const key = (await this.storage.get(ACCESSOR + accessor))?.toString();
    if (!key) return null;
    const entry = await this.storage.getJSON<TokenEntry>(ID + key);
    if (!entry) return null;
    const live = duringLastUse && entry.numUses < 0 ? { ...entry, numUses: 0 } : entry;
    return isExpired(live) ? null : { key, entry };
  }

  /** Key (hash) of a token value, for callers that then work by accessor. */
  async keyOf(token: string): Promise<string | null> {
    if (token.startsWith(BATCH_PREFIX)) return null;
    const key = this.hash(token);
    return (await this.storage.get(ID + key)) ? key : null;
  }

  async update(accessor: string, change: (entry: TokenEntry) => TokenEntry): Promise<TokenEntry> {
    return this.changing(async (tx) => {
      const key = await this.keyForAccessor(tx, accessor);
      await tx.lock(ID + key);
      const current = await readEntry(tx, key);
      if (!current) throw ServiceError.badRequest('token not found');
      const next = change(current);
      await tx.put(ID + key, encode(next));
      return { changed: key, result: next };
    });
  }

  /**
   * Counts one use of a limited-use token. Returns false when no use is left (the token must then
   * be revoked); concurrent requests never both spend the last use.
   */
  async spendUse(accessor: string): Promise<{ allowed: boolean; remaining: number }> {
    return this.changing<{ allowed: boolean; remaining: number }>(async (tx) => {
      const key = await this.keyForAccessor(tx, accessor);
      await tx.lock(ID + key);
      const entry = await readEntry(tx, key);
      if (!entry || entry.numUses <= 0) return { result: { allowed: false, remaining: 0 } };
      const next = { ...entry, numUses: entry.numUses - 1 };
      // The last use is spent by marking the entry exhausted (-1); revocation follows the request.
      if (next.numUses === 0) next.numUses = -1;
      await tx.put(ID + key, encode(next));
      return { changed: key, result: { allowed: true, remaining: next.numUses } };
    });
  }

  /** Accessors of a token's direct children. */
  async children(accessor: string): Promise<string[]> {
    return (await this.storage.list(`${PARENT}${accessor}/`)).filter((k) => !k.endsWith('/'));
  }

  /** Deletes one token's entry and indexes (children and leases are the caller's business). */
  async remove(accessor: string): Promise<TokenEntry | null> {
    return this.changing(async (tx) => {
      const key = (await tx.get(ACCESSOR + accessor))?.toString();
      if (!key) return { result: null };
      const entry = await readEntry(tx, key);
      await tx.delete(ID + key);
      await tx.delete(ACCESSOR + accessor);
      if (entry?.parent) await tx.delete(`${PARENT}${entry.parent}/${accessor}`);
      for (const child of (await tx.list(`${PARENT}${accessor}/`)).filter((k) => !k.endsWith('/'))) {
        await tx.delete(`${PARENT}${accessor}/${child}`);
      }
      return { changed: key, result: entry };
    });
  }

  /**
   * Runs a transaction that may change one token's entry (`changed`, its key) and forgets the cached
   * entry once the change committed, so no lookup under way meanwhile caches the entry as it was.
   */
  private async changing<T>(change: (tx: Transaction) => Promise<{ changed?: string; result: T }>): Promise<T> {
    const { changed, result } = await this.storage.transaction(change);
    if (changed !== undefined) this.forget(changed);
    return result;
  }

  /** Makes a token's children orphans (revoke-orphan). */
  async orphanChildren(accessor: string): Promise<void> {
    for (const child of await this.children(accessor)) {
      await this.update(child, (entry) => ({ ...entry, parent: '' }));
      await this.storage.delete(`${PARENT}${accessor}/${child}`);
    }
  }

  async allAccessors(): Promise<string[]> {
    return (await this.storage.list(ACCESSOR)).filter((k) => !k.endsWith('/'));
  }

  /** tidy: removes parent-index entries whose child or parent no longer exists. */
  async tidy(): Promise<number> {
    let removed = 0;
    for (const parentDir of (await this.storage.list(PARENT)).filter((k) => k.endsWith('/'))) {
      const parent = parentDir.slice(0, -1);
      const parentAlive = await this.storage.get(ACCESSOR + parent);
      for (const child of await this.children(parent)) {
        if (!parentAlive || !(await this.storage.get(ACCESSOR + child))) {
          await this.storage.delete(`${PARENT}${parent}/${child}`);
          removed++;
        }
      }
    }
    return removed;
  }

  async role(name: string): Promise<TokenRole | null> {
    return this.storage.getJSON<TokenRole>(ROLE + name);
  }

  async putRole(role: TokenRole): Promise<void> {
    await this.storage.putJSON(ROLE + role.name, role);
  }

  async deleteRole(name: string): Promise<void> {
    await this.storage.delete(ROLE + name);
  }

  async roles(): Promise<string[]> {
    return (await this.storage.list(ROLE)).filter((k) => !k.endsWith('/'));
  }

  private remember(key: string, entry: TokenEntry): void {
    if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, entry);
  }

  private async keyForAccessor(tx: Transaction, accessor: string): Promise<string> {
    const key = (await tx.get(ACCESSOR + accessor))?.toString();
    if (!key) throw ServiceError.badRequest('token not found');
    return key;
  }

  private async secretBytes(name: string): Promise<Buffer> {
    let value = await this.storage.get(name);
    if (!value) {
      value = randomBytes(32);
      await this.storage.put(name, value);
    }
    return value;
  }

  private sealBatch(entry: TokenEntry): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.batchKey!, nonce);
    const body = Buffer.concat([cipher.update(encode(entry)), cipher.final(), cipher.getAuthTag()]);
    return `${BATCH_PREFIX}${Buffer.concat([nonce, body]).toString('base64url')}`;
  }

  private openBatch(token: string): TokenEntry | null {
    try {
      const raw = Buffer.from(token.slice(BATCH_PREFIX.length), 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', this.batchKey!, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(raw.length - 16));
      const plain = Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]);
      const entry = JSON.parse(plain.toString('utf8')) as TokenEntry;
      return isExpired(entry) ? null : entry;
    } catch {
      return null;
    }
  }
}

function isExpired(entry: TokenEntry): boolean {
  if (entry.numUses < 0) return true;
  const expires = expireTime(entry);
  return expires !== undefined && expires <= nowSeconds();
}

function encode(entry: TokenEntry): Buffer {
  return Buffer.from(JSON.stringify(entry));
}

async function readEntry(tx: Transaction, key: string): Promise<TokenEntry | null> {
  const raw = await tx.get(ID + key);
  return raw ? (JSON.parse(raw.toString('utf8')) as TokenEntry) : null;
}
