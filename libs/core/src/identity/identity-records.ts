import { randomUUID } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import type { Transaction } from '@svc/storage';

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

export const ENTITIES = 'entities/';
export const ALIASES = 'aliases/';
/** Indexes: entity name → id, (mount accessor, alias name) → alias id. */
export const ENTITY_NAMES = 'entity-names/';
const ALIAS_KEYS = 'alias-keys/';
/** Every write takes this one lock: the indexes stay unique across gateway replicas. */
export const WRITE_LOCK = 'write-lock';

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
export function keyPart(name: string): string {
  return Buffer.from(name, 'utf8').toString('hex');
}

export function aliasKey(mountAccessor: string, name: string): string {
  return `${ALIAS_KEYS}${mountAccessor}/${keyPart(name)}`;
}

export function now(): string {
  return new Date().toISOString();
}

export function sameRecord(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

/** JSON reads and writes inside one transaction. */
export class Records {
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

