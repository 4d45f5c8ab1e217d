import { randomUUID } from 'node:crypto';
import { mountStoragePrefix } from '@svc/engine-host';
import { ServiceError } from '@svc/api-contract';
import { createView, type StorageView, type TransactionalStore } from '@svc/storage';
import type { Namespace } from '../namespaces/namespace';

import {
  ALIASES,
  aliasKey,
  ENTITIES,
  ENTITY_NAMES,
  keyPart,
  MAX_NAME_BYTES,
  now,
  Records,
  sameRecord,
  withinNameLimit,
  WRITE_LOCK,
  type AliasChanges,
  type Entity,
  type EntityAlias,
  type EntityChanges,
} from './identity-records';
import { GroupRecords, loginGroupChanges, type LoginGroupChanges } from './group-records';
import { GroupStore } from './group-store';

export { MAX_NAME_BYTES, withinNameLimit, type AliasChanges, type Entity, type EntityAlias, type EntityChanges } from './identity-records';

/**
 * The identity store of one namespace: entities and their aliases in the barrier, under the
 * identity/ mount's storage. Reads go through the (replica-invalidated) cache; every write is one
 * transaction under one lock, so concurrent logins on several gateways find or create one entity.
 */
export class IdentityStore {
  readonly groups: GroupStore;

  constructor(private readonly storage: StorageView) {
    this.groups = new GroupStore(storage, (change) => this.write(change));
  }

  private write<T>(fn: (records: Records) => Promise<T>): Promise<T> {
    return this.storage.transaction(async (tx) => {
      await tx.lock(WRITE_LOCK);
      return fn(new Records(tx));
    });
  }

  entity(id: string): Promise<Entity | null> {
    return id === '' ? Promise.resolve(null) : this.storage.getJSON<Entity>(ENTITIES + id);
  }

  /** The policies an entity's tokens have besides their own (none for an entity that no longer exists). */
  async identityPolicies(entityId: string): Promise<string[]> {
    const entity = await this.entity(entityId);
    return entity ? this.groups.identityPolicies(entity) : [];
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
      await new GroupRecords(records).forgetEntity(id);
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
   * alias. The alias takes the login's metadata; with `groupAliases` (the identity provider's
   * groups), the entity belongs to exactly the external groups aliased by those names on the mount.
   * Only a first login or a change writes.
   */
  async loginEntity(mountAccessor: string, name: string, metadata: Record<string, string>, groupAliases?: readonly string[]): Promise<Entity> {
    if (!withinNameLimit(name)) throw ServiceError.badRequest(`the login's alias name is longer than ${MAX_NAME_BYTES} bytes, the most an entity alias may have`);
    const groupsUnchanged = async (entityId: string, get: <T>(key: string) => Promise<T | null>) =>
      !groupAliases || noChanges(await loginGroupChanges(get, entityId, mountAccessor, groupAliases));
    const known = await this.aliasByName(mountAccessor, name);
    const entity = known && sameRecord(known.metadata, metadata) ? await this.entity(known.canonical_id) : null;
    if (entity && (await groupsUnchanged(entity.id, (key) => this.storage.getJSON(key)))) return entity;
    return this.write(async (records) => {
      const aliasId = await records.get<string>(aliasKey(mountAccessor, name));
      const alias = aliasId ? await records.get<EntityAlias>(ALIASES + aliasId) : null;
      let entityId: string;
      if (alias) {
        if (!sameRecord(alias.metadata, metadata)) await records.put(ALIASES + alias.id, { ...alias, metadata, last_update_time: now() });
        entityId = alias.canonical_id;
      } else {
        entityId = (await records.newEntity({})).id;
        const time = now();
        await records.putAlias({ id: randomUUID(), name, mount_accessor: mountAccessor, canonical_id: entityId, metadata, custom_metadata: {}, creation_time: time, last_update_time: time });
      }
      if (groupAliases) await new GroupRecords(records).applyLoginGroups(entityId, await loginGroupChanges((key) => records.get(key), entityId, mountAccessor, groupAliases));
      return records.entity(entityId);
    });
  }
}

const noChanges = (changes: LoginGroupChanges) => changes.join.length === 0 && changes.leave.length === 0;

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
