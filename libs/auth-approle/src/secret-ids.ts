import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import type { StorageView, Transaction } from '@svc/storage';

/** A secret ID as stored: only its HMAC names it, so storage never holds a usable one. */
export interface SecretIdEntry {
  secret_id_accessor: string;
  /** Uses left; 0 = unlimited. */
  secret_id_num_uses: number;
  /** Seconds; 0 = never expires. */
  secret_id_ttl: number;
  creation_time: string;
  /** RFC 3339; Go's zero time when it never expires, as Vault answers. */
  expiration_time: string;
  last_updated_time: string;
  metadata: Record<string, string>;
  cidr_list: string[];
  token_bound_cidrs: string[];
}

export type NewSecretId = Pick<SecretIdEntry, 'secret_id_num_uses' | 'secret_id_ttl' | 'metadata' | 'cidr_list' | 'token_bound_cidrs'>;

interface AccessorEntry {
  role: string;
  hmac: string;
}

const NEVER = '0001-01-01T00:00:00Z';
const HMAC_KEY = 'hmac-key';
const SECRET_IDS = 'secret-id/';
const ACCESSORS = 'accessor/';

/**
 * The secret IDs of an approle mount. Each is stored under the HMAC of its value (a key kept in the
 * mount's storage), and found by accessor through an index. Spending a use and deleting happen in
 * storage transactions holding the entry's lock, so two gateway replicas never both spend the last use.
 */
export class SecretIds {
  private hmacKey?: Buffer;

  constructor(private readonly storage: StorageView) {}

  async create(role: string, secretId: string, settings: NewSecretId): Promise<SecretIdEntry> {
    const hmac = await this.hmac(secretId);
    const now = new Date();
    const entry: SecretIdEntry = {
      ...settings,
      secret_id_accessor: randomUUID(),
      creation_time: now.toISOString(),
      last_updated_time: now.toISOString(),
      expiration_time: settings.secret_id_ttl > 0 ? new Date(now.getTime() + settings.secret_id_ttl * 1000).toISOString() : NEVER,
    };
    await this.storage.transaction(async (tx) => {
      const key = entryKey(role, hmac);
      await tx.lock(key);
      if (await tx.get(key)) throw ServiceError.badRequest('secret_id is already registered');
      await tx.put(key, json(entry));
      await tx.put(ACCESSORS + entry.secret_id_accessor, json({ role, hmac } satisfies AccessorEntry));
    });
    return entry;
  }

  /** The live entry of a secret ID of `role`, or null. */
  async lookup(role: string, secretId: string): Promise<SecretIdEntry | null> {
    const entry = await this.storage.getJSON<SecretIdEntry>(entryKey(role, await this.hmac(secretId)));
    return entry && !expired(entry) ? entry : null;
  }

  async lookupAccessor(role: string, accessor: string): Promise<SecretIdEntry | null> {
    const index = await this.accessorEntry(role, accessor);
    const entry = index && (await this.storage.getJSON<SecretIdEntry>(entryKey(role, index.hmac)));
    return entry && !expired(entry) ? entry : null;
  }

  async destroy(role: string, secretId: string): Promise<void> {
    const hmac = await this.hmac(secretId);
    await this.storage.transaction((tx) => removeEntry(tx, role, hmac));
  }

  async destroyAccessor(role: string, accessor: string): Promise<void> {
    const index = await this.accessorEntry(role, accessor);
    if (!index) throw ServiceError.badRequest(`no secret ID of role "${role}" has the accessor "${accessor}"`);
    await this.storage.transaction((tx) => removeEntry(tx, role, index.hmac));
  }

  async accessors(role: string): Promise<string[]> {
    const accessors: string[] = [];
    for (const hmac of await this.storage.list(SECRET_IDS + role + '/')) {
      const entry = await this.storage.getJSON<SecretIdEntry>(entryKey(role, hmac));
      if (entry) accessors.push(entry.secret_id_accessor);
    }
    return accessors;
  }

  /**
   * Spends one use of a secret ID for a login. `check` sees the entry first and may refuse (CIDR
   * binding); an unknown, expired or used-up secret ID answers null. The last use deletes it.
   */
  async spend(role: string, secretId: string, check: (entry: SecretIdEntry) => void): Promise<SecretIdEntry | null> {
    const hmac = await this.hmac(secretId);
    return this.storage.transaction(async (tx) => {
      const key = entryKey(role, hmac);
      await tx.lock(key);
      const raw = await tx.get(key);
      if (!raw) return null;
      const entry = JSON.parse(raw.toString('utf8')) as SecretIdEntry;
      if (expired(entry)) return null; // tidy removes it
      check(entry);
      if (entry.secret_id_num_uses === 1) await removeEntry(tx, role, hmac);
      else if (entry.secret_id_num_uses > 1) {
        await tx.put(key, json({ ...entry, secret_id_num_uses: entry.secret_id_num_uses - 1, last_updated_time: new Date().toISOString() }));
      }
      return entry;
    });
  }

  /** Deletes every secret ID of a role (the role is being deleted). */
  async removeRole(role: string): Promise<void> {
    for (const hmac of await this.storage.list(SECRET_IDS + role + '/')) await this.storage.transaction((tx) => removeEntry(tx, role, hmac));
  }

  /** Removes expired secret IDs and accessors whose secret ID is gone; answers how many of each. */
  async tidy(): Promise<{ secretIds: number; accessors: number }> {
    let secretIds = 0;
    let accessors = 0;
    for (const roleDir of await this.storage.list(SECRET_IDS)) {
      const role = roleDir.replace(/\/$/, '');
      for (const hmac of await this.storage.list(SECRET_IDS + roleDir)) {
        const removed = await this.storage.transaction(async (tx) => {
          const key = entryKey(role, hmac);
          await tx.lock(key);
          const raw = await tx.get(key);
          if (!raw || !expired(JSON.parse(raw.toString('utf8')) as SecretIdEntry)) return false;
          await removeEntry(tx, role, hmac);
          return true;
        });
        if (removed) secretIds++;
      }
    }
    for (const accessor of await this.storage.list(ACCESSORS)) {
      const index = await this.storage.getJSON<AccessorEntry>(ACCESSORS + accessor);
      if (index && !(await this.storage.get(entryKey(index.role, index.hmac)))) {
        await this.storage.delete(ACCESSORS + accessor);
        accessors++;
      }
    }
    return { secretIds, accessors };
  }

  private async accessorEntry(role: string, accessor: string): Promise<AccessorEntry | null> {
    if (!accessor || accessor.includes('/')) return null;
    const index = await this.storage.getJSON<AccessorEntry>(ACCESSORS + accessor);
    return index?.role === role ? index : null;
  }

  /** HMAC-SHA256 of a secret ID with the mount's key, made once (under a lock, so replicas agree). */
  private async hmac(secretId: string): Promise<string> {
    this.hmacKey ??= await this.storage.transaction(async (tx) => {
      await tx.lock(HMAC_KEY);
      const existing = await tx.get(HMAC_KEY);
      if (existing) return Buffer.from(existing);
      const key = randomBytes(32);
      await tx.put(HMAC_KEY, key);
      return key;
    });
    return createHmac('sha256', this.hmacKey).update(secretId).digest('hex');
  }
}

function entryKey(role: string, hmac: string): string {
  return `${SECRET_IDS}${role}/${hmac}`;
}

function expired(entry: SecretIdEntry): boolean {
  return entry.expiration_time !== NEVER && Date.parse(entry.expiration_time) <= Date.now();
}

async function removeEntry(tx: Transaction, role: string, hmac: string): Promise<void> {
  const key = entryKey(role, hmac);
  const raw = await tx.get(key);
  if (!raw) return;
  const entry = JSON.parse(raw.toString('utf8')) as SecretIdEntry;
  await tx.delete(key);
  await tx.delete(ACCESSORS + entry.secret_id_accessor);
}

function json(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}
