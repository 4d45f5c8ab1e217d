import { randomUUID } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';
import { keyPart, now, type Entity, type Records } from './identity-records';
import {
  ENTITY_GROUPS,
  GROUP_ALIASES,
  GROUP_NAMES,
  groupAliasKey,
  GroupRecords,
  GROUPS,
  type Group,
  type GroupAlias,
  type GroupAliasChanges,
  type GroupChanges,
} from './group-records';

/** Runs a change in the identity store's one write transaction (under its lock). */
export type IdentityWrite = <T>(change: (records: Records) => Promise<T>) => Promise<T>;

/** An entity's groups: those that list it, and those it belongs to through them. */
export interface Memberships {
  direct: string[];
  inherited: string[];
}

/**
 * The groups of one namespace's identity store, with their aliases. Reads go through the
 * (replica-invalidated) cache; writes share the entities' transaction and lock, so memberships
 * and the entity-to-groups index stay in step across gateways.
 */
export class GroupStore {
  constructor(
    private readonly storage: StorageView,
    private readonly write: IdentityWrite,
  ) {}

  private change<T>(fn: (groups: GroupRecords) => Promise<T>): Promise<T> {
    return this.write((records) => fn(new GroupRecords(records)));
  }

  group(id: string): Promise<Group | null> {
    return id === '' ? Promise.resolve(null) : this.storage.getJSON<Group>(GROUPS + id);
  }

  async groupByName(name: string): Promise<Group | null> {
    const id = await this.storage.getJSON<string>(GROUP_NAMES + keyPart(name));
    return id ? this.group(id) : null;
  }

  groupIds(): Promise<string[]> {
    return this.storage.list(GROUPS);
  }

  async groupNames(): Promise<string[]> {
    const keys = await this.storage.list(GROUP_NAMES);
    return keys.map((key) => Buffer.from(key, 'hex').toString('utf8')).sort();
  }

  alias(id: string): Promise<GroupAlias | null> {
    return id === '' ? Promise.resolve(null) : this.storage.getJSON<GroupAlias>(GROUP_ALIASES + id);
  }

  async aliasByName(mountAccessor: string, name: string): Promise<GroupAlias | null> {
    const id = await this.storage.getJSON<string>(groupAliasKey(mountAccessor, name));
    return id ? this.alias(id) : null;
  }

  aliasIds(): Promise<string[]> {
    return this.storage.list(GROUP_ALIASES);
  }

  /** Creates a group, or updates the one of that id (or, without an id, of that name). */
  upsertGroup(changes: GroupChanges, id?: string): Promise<Group> {
    return this.change(async (groups) => {
      const existingId = id ?? (changes.name ? await groups.idByName(changes.name) : null);
      const existing = existingId ? await groups.findGroup(existingId) : null;
      return groups.write(existing, changes, id);
    });
  }

  /** Updates an existing group (400 when there is none of that id). */
  updateGroup(id: string, changes: GroupChanges): Promise<Group> {
    return this.change(async (groups) => groups.write(await groups.group(id), changes));
  }

  /** Deletes a group and its alias; nothing happens when it does not exist. */
  deleteGroup(id: string): Promise<void> {
    return this.change(async (groups) => {
      const group = await groups.findGroup(id);
      if (group) await groups.delete(group);
    });
  }

  createAlias(changes: Required<GroupAliasChanges>, id: string = randomUUID()): Promise<GroupAlias> {
    return this.change(async (groups) => {
      if (await groups.findAlias(id)) throw ServiceError.badRequest(`field "id": group alias "${id}" already exists`);
      const time = now();
      const alias: GroupAlias = { id, ...changes, creation_time: time, last_update_time: time };
      await groups.putAlias(alias);
      return alias;
    });
  }

  updateAlias(id: string, changes: GroupAliasChanges): Promise<GroupAlias> {
    return this.change(async (groups) => {
      const existing = await groups.alias(id);
      const updated: GroupAlias = { ...existing, ...Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined)), last_update_time: now() };
      await groups.putAlias(updated, existing);
      return updated;
    });
  }

  deleteAlias(id: string): Promise<void> {
    return this.change(async (groups) => {
      const alias = await groups.findAlias(id);
      if (alias) await groups.deleteAlias(alias);
    });
  }

  /** The groups an entity belongs to, directly and through their parent groups. */
  async memberships(entityId: string): Promise<Memberships> {
    const direct = (await this.storage.getJSON<string[]>(ENTITY_GROUPS + entityId)) ?? [];
    const seen = new Set(direct);
    const inherited: string[] = [];
    const pending = [...direct];
    while (pending.length) {
      const group = await this.group(pending.pop()!);
      for (const parentId of group?.parent_group_ids ?? []) {
        if (seen.has(parentId)) continue;
        seen.add(parentId);
        inherited.push(parentId);
        pending.push(parentId);
      }
    }
    return { direct, inherited };
  }

  /** The policies an entity's tokens have besides their own: the entity's and all its groups'. */
  async identityPolicies(entity: Entity): Promise<string[]> {
    const { direct, inherited } = await this.memberships(entity.id);
    if (!direct.length) return entity.policies;
    const groups = await Promise.all([...direct, ...inherited].map((id) => this.group(id)));
    return [...new Set([...entity.policies, ...groups.flatMap((group) => group?.policies ?? [])])];
  }
}
