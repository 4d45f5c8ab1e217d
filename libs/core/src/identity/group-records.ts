import { randomUUID } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import { keyPart, now, type Records } from './identity-records';

/**
 * A group of entities. Operators set an internal group's members; an external group's members are
 * the entities whose logins on its alias's mount named the alias (the identity provider's groups).
 */
export interface Group {
  id: string;
  name: string;
  type: 'internal' | 'external';
  policies: string[];
  metadata: Record<string, string>;
  member_entity_ids: string[];
  /** Groups whose members are members of this one (internal groups only). */
  member_group_ids: string[];
  /** Groups that list this one in their member_group_ids. */
  parent_group_ids: string[];
  /** Id of its group alias ('' for none): external groups have at most one. */
  alias_id: string;
  creation_time: string;
  last_update_time: string;
}

/** The name an auth mount knows an external group by (a group claim's value). */
export interface GroupAlias {
  id: string;
  name: string;
  mount_accessor: string;
  canonical_id: string;
  creation_time: string;
  last_update_time: string;
}

export type GroupChanges = Partial<Pick<Group, 'name' | 'type' | 'policies' | 'metadata' | 'member_entity_ids' | 'member_group_ids'>>;
export type GroupAliasChanges = Partial<Pick<GroupAlias, 'name' | 'mount_accessor' | 'canonical_id'>>;

export const GROUPS = 'groups/';
export const GROUP_NAMES = 'group-names/';
export const GROUP_ALIASES = 'group-aliases/';
const GROUP_ALIAS_KEYS = 'group-alias-keys/';
/** entity id → ids of the groups that list it as a member (internal and external). */
export const ENTITY_GROUPS = 'entity-groups/';

export function groupAliasKey(mountAccessor: string, name: string): string {
  return `${GROUP_ALIAS_KEYS}${mountAccessor}/${keyPart(name)}`;
}

const without = (ids: string[], id: string) => ids.filter((other) => other !== id);
const added = (ids: string[], id: string) => (ids.includes(id) ? ids : [...ids, id]);

/** Group records inside one identity transaction; every change keeps the membership indexes in step. */
export class GroupRecords {
  constructor(private readonly records: Records) {}

  findGroup(id: string): Promise<Group | null> {
    return this.records.get<Group>(GROUPS + id);
  }

  findAlias(id: string): Promise<GroupAlias | null> {
    return this.records.get<GroupAlias>(GROUP_ALIASES + id);
  }

  async group(id: string): Promise<Group> {
    const group = await this.findGroup(id);
    if (!group) throw ServiceError.badRequest(`group "${id}" does not exist`);
    return group;
  }

  async alias(id: string): Promise<GroupAlias> {
    const alias = await this.findAlias(id);
    if (!alias) throw ServiceError.badRequest(`group alias "${id}" does not exist`);
    return alias;
  }

  idByName(name: string): Promise<string | null> {
    return this.records.get<string>(GROUP_NAMES + keyPart(name));
  }

  async groupsOfEntity(entityId: string): Promise<string[]> {
    return (await this.records.get<string[]>(ENTITY_GROUPS + entityId)) ?? [];
  }

  /** Creates a group, or applies changes to the existing one; membership lists are replaced whole. */
  async write(existing: Group | null, changes: GroupChanges, id: string = randomUUID()): Promise<Group> {
    const time = now();
    const type = changes.type ?? existing?.type ?? 'internal';
    if (existing && changes.type && changes.type !== existing.type) throw ServiceError.badRequest(`field "type": a group's type cannot change (it is "${existing.type}")`);
    if (type === 'external' && (changes.member_entity_ids?.length || changes.member_group_ids?.length)) {
      throw ServiceError.badRequest('an external group\'s members come from logins: member_entity_ids and member_group_ids cannot be set');
    }
    const group: Group = {
      id: existing?.id ?? id,
      name: changes.name || existing?.name || `group_${id}`,
      type,
      policies: changes.policies ?? existing?.policies ?? [],
      metadata: changes.metadata ?? existing?.metadata ?? {},
      member_entity_ids: existing?.member_entity_ids ?? [],
      member_group_ids: existing?.member_group_ids ?? [],
      parent_group_ids: existing?.parent_group_ids ?? [],
      alias_id: existing?.alias_id ?? '',
      creation_time: existing?.creation_time ?? time,
      last_update_time: time,
    };
    await this.claimName(group, existing?.name);
    if (changes.member_entity_ids) await this.setMemberEntities(group, [...new Set(changes.member_entity_ids)]);
    if (changes.member_group_ids) await this.setMemberGroups(group, [...new Set(changes.member_group_ids)]);
    await this.records.put(GROUPS + group.id, group);
    return group;
  }

  async delete(group: Group): Promise<void> {
    for (const entityId of group.member_entity_ids) await this.changeEntityGroups(entityId, (ids) => without(ids, group.id));
    for (const childId of group.member_group_ids) await this.changeGroup(childId, (child) => ({ ...child, parent_group_ids: without(child.parent_group_ids, group.id) }));
    for (const parentId of group.parent_group_ids) await this.changeGroup(parentId, (parent) => ({ ...parent, member_group_ids: without(parent.member_group_ids, group.id) }));
    if (group.alias_id) await this.deleteAlias(await this.alias(group.alias_id), false);
    await this.records.delete(GROUP_NAMES + keyPart(group.name));
    await this.records.delete(GROUPS + group.id);
  }

  /** Writes a group alias: (mount accessor, name) unique, its group external with no other alias. */
  async putAlias(alias: GroupAlias, previous?: GroupAlias): Promise<void> {
    const key = groupAliasKey(alias.mount_accessor, alias.name);
    const holder = await this.records.get<string>(key);
    if (holder && holder !== alias.id) throw ServiceError.badRequest(`a group alias named "${alias.name}" already exists for mount accessor "${alias.mount_accessor}"`);
    const group = await this.group(alias.canonical_id);
    if (group.type !== 'external') throw ServiceError.badRequest(`field "canonical_id": group "${group.id}" is internal; only external groups have aliases`);
    if (group.alias_id && group.alias_id !== alias.id) throw ServiceError.badRequest(`field "canonical_id": group "${group.id}" already has an alias`);
    if (previous) {
      const previousKey = groupAliasKey(previous.mount_accessor, previous.name);
      if (previousKey !== key) await this.records.delete(previousKey);
      if (previous.canonical_id !== alias.canonical_id) await this.changeGroup(previous.canonical_id, (former) => ({ ...former, alias_id: '' }));
    }
    if (group.alias_id !== alias.id) await this.records.put(GROUPS + group.id, { ...group, alias_id: alias.id });
    await this.records.put(key, alias.id);
    await this.records.put(GROUP_ALIASES + alias.id, alias);
  }

  async deleteAlias(alias: GroupAlias, detach = true): Promise<void> {
    await this.records.delete(groupAliasKey(alias.mount_accessor, alias.name));
    await this.records.delete(GROUP_ALIASES + alias.id);
    if (detach) await this.changeGroup(alias.canonical_id, (group) => ({ ...group, alias_id: '' }));
  }

  /** Removes a deleted entity from the groups that list it. */
  async forgetEntity(entityId: string): Promise<void> {
    for (const groupId of await this.groupsOfEntity(entityId)) {
      await this.changeGroup(groupId, (group) => ({ ...group, member_entity_ids: without(group.member_entity_ids, entityId) }));
    }
    await this.records.delete(ENTITY_GROUPS + entityId);
  }

  /** Applies a login's changes to the entity's external groups (see loginGroupChanges). */
  async applyLoginGroups(entityId: string, changes: LoginGroupChanges): Promise<void> {
    for (const groupId of changes.leave) {
      await this.changeGroup(groupId, (group) => ({ ...group, member_entity_ids: without(group.member_entity_ids, entityId), last_update_time: now() }));
      await this.changeEntityGroups(entityId, (ids) => without(ids, groupId));
    }
    for (const groupId of changes.join) {
      await this.changeGroup(groupId, (group) => ({ ...group, member_entity_ids: added(group.member_entity_ids, entityId), last_update_time: now() }));
      await this.changeEntityGroups(entityId, (ids) => added(ids, groupId));
    }
  }

  private async claimName(group: Group, previousName?: string): Promise<void> {
    if (previousName === group.name) return;
    const holder = await this.idByName(group.name);
    if (holder && holder !== group.id) throw ServiceError.badRequest(`field "name": a group named "${group.name}" already exists`);
    if (previousName !== undefined) await this.records.delete(GROUP_NAMES + keyPart(previousName));
    await this.records.put(GROUP_NAMES + keyPart(group.name), group.id);
  }

  private async setMemberEntities(group: Group, entityIds: string[]): Promise<void> {
    for (const entityId of entityIds) await this.records.entity(entityId);
    for (const entityId of group.member_entity_ids) if (!entityIds.includes(entityId)) await this.changeEntityGroups(entityId, (ids) => without(ids, group.id));
    for (const entityId of entityIds) await this.changeEntityGroups(entityId, (ids) => added(ids, group.id));
    group.member_entity_ids = entityIds;
  }

  private async setMemberGroups(group: Group, groupIds: string[]): Promise<void> {
    const ancestors = await this.ancestors(group);
    for (const childId of groupIds) {
      if (childId === group.id || ancestors.has(childId)) throw ServiceError.badRequest(`field "member_group_ids": group "${childId}" would make the group a member of itself`);
      await this.group(childId);
    }
    for (const childId of group.member_group_ids) {
      if (!groupIds.includes(childId)) await this.changeGroup(childId, (child) => ({ ...child, parent_group_ids: without(child.parent_group_ids, group.id) }));
    }
    for (const childId of groupIds) await this.changeGroup(childId, (child) => ({ ...child, parent_group_ids: added(child.parent_group_ids, group.id) }));
    group.member_group_ids = groupIds;
  }

  private async ancestors(group: Group): Promise<Set<string>> {
    const found = new Set<string>();
    const pending = [...group.parent_group_ids];
    while (pending.length) {
      const id = pending.pop()!;
      if (found.has(id)) continue;
      found.add(id);
      pending.push(...((await this.records.get<Group>(GROUPS + id))?.parent_group_ids ?? []));
    }
    return found;
  }

  private async changeGroup(id: string, change: (group: Group) => Group): Promise<void> {
    const group = await this.records.get<Group>(GROUPS + id);
    if (group) await this.records.put(GROUPS + id, change(group));
  }

  private async changeEntityGroups(entityId: string, change: (ids: string[]) => string[]): Promise<void> {
    const ids = change(await this.groupsOfEntity(entityId));
    await (ids.length ? this.records.put(ENTITY_GROUPS + entityId, ids) : this.records.delete(ENTITY_GROUPS + entityId));
  }
}

/** The external groups a login makes the entity join and leave. */
export interface LoginGroupChanges {
  join: string[];
  leave: string[];
}

type ReadRecord = <T>(key: string) => Promise<T | null>;

/**
 * What a login naming `names` (its identity provider's groups) changes: the entity belongs to
 * exactly the external groups aliased on this mount under those names; its other groups stay.
 * Reads only, so a login whose groups are unchanged writes nothing.
 */
export async function loginGroupChanges(get: ReadRecord, entityId: string, mountAccessor: string, names: readonly string[]): Promise<LoginGroupChanges> {
  const wanted = new Set<string>();
  for (const name of new Set(names)) {
    const aliasId = await get<string>(groupAliasKey(mountAccessor, name));
    const alias = aliasId ? await get<GroupAlias>(GROUP_ALIASES + aliasId) : null;
    if (alias) wanted.add(alias.canonical_id);
  }
  const leave: string[] = [];
  for (const groupId of (await get<string[]>(ENTITY_GROUPS + entityId)) ?? []) {
    if (wanted.delete(groupId)) continue;
    const group = await get<Group>(GROUPS + groupId);
    const alias = group?.alias_id ? await get<GroupAlias>(GROUP_ALIASES + group.alias_id) : null;
    if (alias?.mount_accessor === mountAccessor) leave.push(groupId);
  }
  return { join: [...wanted], leave };
}
