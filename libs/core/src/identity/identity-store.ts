import { randomUUID } from 'node:crypto';
import { mountStoragePrefix } from '@svc/engine-host';
import { ServiceError } from '@svc/api-contract';
import { createView, type StorageView, type Transaction, type TransactionalStore } from '@svc/storage';
import type { Namespace } from '../namespaces/namespace';

/** An entity: one client, whatever methods it logs in with. */
export interface Entity {
  id: string;
  name: string;
  metadata: Record<string, string>;
  policies: string[];
  disabled: boolean;
  creation_time: string;
  last_update_time: string;
  /** Its aliases, at most one per auth mount. */
  alias_ids: string[];
}

/** An alias: the name an auth mount knows an entity by. */
export interface EntityAlias {
  id: string;
  name: string;
  mount_accessor: string;
  canonical_id: string;
  /** Set by logins. */
  metadata: Record<string, string>;
  /** Set by operators. */
  custom_metadata: Record<string, string>;
  creation_time: string;
  last_update_time: string;
}

export type EntityChanges = Partial<Pick<Entity, 'name' | 'metadata' | 'policies' | 'disabled'>>;
export type AliasChanges = Partial<Pick<EntityAlias, 'name' | 'mount_accessor' | 'canonical_id' | 'custom_metadata'>>;

const ENTITIES = 'entities/';
const ALIASES = 'aliases/';
/** Indexes: entity name → id, (mount accessor, alias name) → alias id. */
const ENTITY_NAMES = 'entity-names/';
const ALIAS_KEYS = 'alias-keys/';
/** Every write takes this one lock: the indexes stay unique across gateway replicas. */
const WRITE_LOCK = 'write-lock';

/**
 * The longest entity or alias name, and client-chosen id, in UTF-8 bytes. The name indexes hold a
 * name hex-encoded (twice as long) in a storage key, and SQL storage indexes a key whole, at most
 * about 2.7 KB: a longer name was accepted, then failed there as a 500.
 */
export const MAX_NAME_BYTES = 1024;

export function withinNameLimit(name: string): boolean {
  return Buffer.byteLength(name, 'utf8') <= MAX_NAME_BYTES;
}

/** Names may hold any character; storage keys hold them hex-encoded. */
function keyPart(name: string): string {
  return Buffer.from(name, 'utf8').toString('hex');
}

function aliasKey(mountAccessor: string, name: string): string {
  return `${ALIAS_KEYS}${mountAccessor}/${keyPart(name)}`;
}

function now(): string {
  return new Date().toISOString();
}

function sameRecord(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

/** JSON reads and writes inside one transaction. */
class Records {
  constructor(private readonly tx: Transaction) {}

  async get<T>(key: string): Promise<T | null> {
    const value = await this.tx.get(key);
    return value ? (JSON.parse(value.toString('utf8')) as T) : null;
  }

  put(key: string, value: unknown): Promise<void> {
    return this.tx.put(key, Buffer.from(JSON.stringify(value), 'utf8'));
  }

  delete(key: string): Promise<void> {
    return this.tx.delete(key);
  }

  async entity(id: string): Promise<Entity> {
    const entity = await this.get<Entity>(ENTITIES + id);
    if (!entity) throw ServiceError.badRequest(`entity "${id}" does not exist`);
    return entity;
  }

  async alias(id: string): Promise<EntityAlias> {
    const alias = await this.get<EntityAlias>(ALIASES + id);
    if (!alias) throw ServiceError.badRequest(`entity alias "${id}" does not exist`);
    return alias;
  }

  async putEntity(entity: Entity, previousName?: string): Promise<void> {
    if (previousName !== entity.name) {
      const holder = await this.get<string>(ENTITY_NAMES + keyPart(entity.name));
      if (holder && holder !== entity.id) throw ServiceError.badRequest(`field "name": an entity named "${entity.name}" already exists`);
      if (previousName !== undefined) await this.delete(ENTITY_NAMES + keyPart(previousName));
      await this.put(ENTITY_NAMES + keyPart(entity.name), entity.id);
    }
    await this.put(ENTITIES + entity.id, entity);
  }

  async newEntity(changes: EntityChanges, id: string = randomUUID()): Promise<Entity> {
    const time = now();
    const entity: Entity = {
      id,
      name: changes.name || `entity_${id}`,
      metadata: changes.metadata ?? {},
      policies: changes.policies ?? [],
      disabled: changes.disabled ?? false,
      creation_time: time,
      last_update_time: time,
      alias_ids: [],
    };
    await this.putEntity(entity);
    return entity;
  }

  /** Writes an alias, keeping (mount accessor, name) unique and one alias per mount on an entity. */
  async putAlias(alias: EntityAlias, previous?: EntityAlias): Promise<void> {
    const key = aliasKey(alias.mount_accessor, alias.name);
    const holder = await this.get<string>(key);
    if (holder && holder !== alias.id) throw ServiceError.badRequest(`an alias named "${alias.name}" already exists for mount accessor "${alias.mount_accessor}"`);
    const entity = await this.entity(alias.canonical_id);
    for (const otherId of entity.alias_ids) {
      if (otherId === alias.id) continue;
      const other = await this.alias(otherId);
      if (other.mount_accessor === alias.mount_accessor) {
        throw ServiceError.badRequest(`entity "${entity.id}" already has an alias for mount accessor "${alias.mount_accessor}"`);
      }
    }
    if (previous) {
      const previousKey = aliasKey(previous.mount_accessor, previous.name);
      if (previousKey !== key) await this.delete(previousKey);
      if (previous.canonical_id !== alias.canonical_id) {
        const formerOwner = await this.entity(previous.canonical_id);
        await this.put(ENTITIES + formerOwner.id, { ...formerOwner, alias_ids: formerOwner.alias_ids.filter((id) => id !== alias.id) });
      }
    }
    if (!entity.alias_ids.includes(alias.id)) await this.put(ENTITIES + entity.id, { ...entity, alias_ids: [...entity.alias_ids, alias.id] });
    await this.put(key, alias.id);
    await this.put(ALIASES + alias.id, alias);
  }

  async deleteAlias(alias: EntityAlias, entity?: Entity): Promise<void> {
    await this.delete(aliasKey(alias.mount_accessor, alias.name));
    await this.delete(ALIASES + alias.id);
    if (entity) await this.put(ENTITIES + entity.id, { ...entity, alias_ids: entity.alias_ids.filter((id) => id !== alias.id) });
  }
}

/**
 * The identity store of one namespace: entities and their aliases in the barrier, under the
 * identity/ mount's storage. Reads go through the (replica-invalidated) cache; every write is one
 * transaction under one lock, so concurrent logins on several gateways find or create one entity.
 */
export class IdentityStore {
  constructor(private readonly storage: StorageView) {}

  private write<T>(fn: (records: Records) => Promise<T>): Promise<T> {
    return this.storage.transaction(async (tx) => {
      await tx.lock(WRITE_LOCK);
      return fn(new Records(tx));
    });
  }

  entity(id: string): Promise<Entity | null> {
    return id === '' ? Promise.resolve(null) : this.storage.getJSON<Entity>(ENTITIES + id);
  }

  async entityByName(name: string): Promise<Entity | null> {
    const id = await this.storage.getJSON<string>(ENTITY_NAMES + keyPart(name));
    return id ? this.entity(id) : null;
  }

  alias(id: string): Promise<EntityAlias | null> {
    return id === '' ? Promise.resolve(null) : this.storage.getJSON<EntityAlias>(ALIASES + id);
  }

  async aliasByName(mountAccessor: string, name: string): Promise<EntityAlias | null> {
    const id = await this.storage.getJSON<string>(aliasKey(mountAccessor, name));
    return id ? this.alias(id) : null;
  }

  async aliasesOf(entity: Entity): Promise<EntityAlias[]> {
    const aliases = await Promise.all(entity.alias_ids.map((id) => this.alias(id)));
    return aliases.filter((alias): alias is EntityAlias => alias !== null);
  }

  entityIds(): Promise<string[]> {
    return this.storage.list(ENTITIES);
  }

  async entityNames(): Promise<string[]> {
    const keys = await this.storage.list(ENTITY_NAMES);
    return keys.map((key) => Buffer.from(key, 'hex').toString('utf8')).sort();
  }

  aliasIds(): Promise<string[]> {
    return this.storage.list(ALIASES);
  }

  /** Creates an entity, or updates the one of that id (or, without an id, of that name), as Vault's identity/entity does. */
  upsertEntity(changes: EntityChanges, id?: string): Promise<Entity> {
    return this.write(async (records) => {
      const existingId = id ?? (changes.name ? await records.get<string>(ENTITY_NAMES + keyPart(changes.name)) : null);
      const existing = existingId ? await records.get<Entity>(ENTITIES + existingId) : null;
      if (!existing) return records.newEntity(changes, id);
      const updated: Entity = { ...existing, ...defined(changes), last_update_time: now() };
      await records.putEntity(updated, existing.name);
      return updated;
    });
  }

  /** Updates an existing entity (400 when there is none of that id). */
  updateEntity(id: string, changes: EntityChanges): Promise<Entity> {
    return this.write(async (records) => {
      const existing = await records.entity(id);
      const updated: Entity = { ...existing, ...defined(changes), last_update_time: now() };
      await records.putEntity(updated, existing.name);
      return updated;
    });
  }

  /** Deletes an entity and its aliases; nothing happens when it does not exist. */
  deleteEntity(id: string): Promise<void> {
    return this.write(async (records) => {
      const entity = await records.get<Entity>(ENTITIES + id);
      if (!entity) return;
      for (const aliasId of entity.alias_ids) {
        const alias = await records.get<EntityAlias>(ALIASES + aliasId);
        if (alias) await records.deleteAlias(alias);
      }
      await records.delete(ENTITY_NAMES + keyPart(entity.name));
      await records.delete(ENTITIES + id);
    });
  }

  /** Creates an alias; without a canonical id, for a new entity of its own (as Vault does). */
  createAlias(changes: AliasChanges & Pick<EntityAlias, 'name' | 'mount_accessor'>, id: string = randomUUID()): Promise<EntityAlias> {
    return this.write(async (records) => {
      if (await records.get<EntityAlias>(ALIASES + id)) throw ServiceError.badRequest(`field "id": entity alias "${id}" already exists`);
      const canonicalId = changes.canonical_id || (await records.newEntity({})).id;
      const time = now();
      const alias: EntityAlias = {
        id,
        name: changes.name,
        mount_accessor: changes.mount_accessor,
        canonical_id: canonicalId,
        metadata: {},
        custom_metadata: changes.custom_metadata ?? {},
        creation_time: time,
        last_update_time: time,
      };
      await records.putAlias(alias);
      return alias;
    });
  }

  updateAlias(id: string, changes: AliasChanges): Promise<EntityAlias> {
    return this.write(async (records) => {
      const existing = await records.alias(id);
      const updated: EntityAlias = { ...existing, ...defined(changes), last_update_time: now() };
      await records.putAlias(updated, existing);
      return updated;
    });
  }

  deleteAlias(id: string): Promise<void> {
    return this.write(async (records) => {
      const alias = await records.get<EntityAlias>(ALIASES + id);
      if (alias) await records.deleteAlias(alias, (await records.get<Entity>(ENTITIES + alias.canonical_id)) ?? undefined);
    });
  }

  /**
   * A login's entity: the one its alias (mount accessor, name) belongs to, else a new entity and
   * alias. The alias takes the login's metadata. Only a first login or changed metadata writes.
   */
  async loginEntity(mountAccessor: string, name: string, metadata: Record<string, string>): Promise<Entity> {
    if (!withinNameLimit(name)) throw ServiceError.badRequest(`the login's alias name is longer than ${MAX_NAME_BYTES} bytes, the most an entity alias may have`);
    const known = await this.aliasByName(mountAccessor, name);
    const entity = known && sameRecord(known.metadata, metadata) ? await this.entity(known.canonical_id) : null;
    if (entity) return entity;
    return this.write(async (records) => {
      const aliasId = await records.get<string>(aliasKey(mountAccessor, name));
      const alias = aliasId ? await records.get<EntityAlias>(ALIASES + aliasId) : null;
      if (alias) {
        if (!sameRecord(alias.metadata, metadata)) await records.put(ALIASES + alias.id, { ...alias, metadata, last_update_time: now() });
        return records.entity(alias.canonical_id);
      }
      const created = await records.newEntity({});
      const time = now();
      await records.putAlias({ id: randomUUID(), name, mount_accessor: mountAccessor, canonical_id: created.id, metadata, custom_metadata: {}, creation_time: time, last_update_time: time });
      return records.entity(created.id);
    });
  }
}

/** The identity store of a namespace: its identity/ mount's storage in the barrier. */
export function namespaceIdentity(barrier: TransactionalStore, namespace: Namespace): IdentityStore {
  const mount = namespace.secretMounts.get('identity/');
  if (!mount) throw ServiceError.internal(`namespace "${namespace.path}" has no identity/ mount`);
  return new IdentityStore(createView(barrier, mountStoragePrefix(mount)));
}

/** The changes that were given (an absent field keeps its value). */
function defined<T extends object>(changes: T): Partial<T> {
  return Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined)) as Partial<T>;
}
