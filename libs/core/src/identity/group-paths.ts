import type { FieldData, FieldMap, PathDeclaration, Response } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { Group, GroupAlias, GroupAliasChanges, GroupChanges } from './group-records';
import { aliasMount, aliasMountAccessor, type IdentityContext, aliasPaths, given, lookupPath, namedObjectChanges, objectPaths, withinLimit } from './identity-fields';

const GROUP_FIELDS: FieldMap = {
  name: { type: 'string', description: 'Name of the group (generated when absent).' },
  type: { type: 'string', allowed: ['internal', 'external'], description: '"internal" (members set here) or "external" (members from logins through its alias); fixed once created.' },
  metadata: { type: 'kv-pairs', description: 'Key/value metadata of the group.' },
  policies: { type: 'comma-string-list', description: 'Policies the tokens of its members (and of its member groups\' members) have besides their own.' },
  member_entity_ids: { type: 'comma-string-list', description: 'Entities in the group (internal groups; replaces the list).' },
  member_group_ids: { type: 'comma-string-list', description: 'Groups whose members are members of this one (internal groups; replaces the list).' },
};
const GROUP_ALIAS_FIELDS: FieldMap = {
  name: { type: 'string', description: 'Name of the alias: the group\'s name at the identity provider (a value of the groups claim).' },
  mount_accessor: { type: 'string', description: 'Accessor of the auth mount whose logins name the group.' },
  canonical_id: { type: 'string', description: 'Id of the external group the alias belongs to.' },
};

function groupChanges(f: FieldData, withName: boolean): GroupChanges {
  return {
    ...namedObjectChanges(f, withName),
    type: given(f, 'type'),
    member_entity_ids: given(f, 'member_entity_ids'),
    member_group_ids: given(f, 'member_group_ids'),
  };
}

/** identity/group*, identity/group-alias* and identity/lookup/group, as Vault's identity engine serves them. */
export function groupPaths(context: IdentityContext): PathDeclaration[] {
  const { groups } = context.store;

  function aliasData(alias: GroupAlias): Record<string, unknown> {
    return {
      id: alias.id,
      name: alias.name,
      canonical_id: alias.canonical_id,
      mount_accessor: alias.mount_accessor,
      ...aliasMount(alias.mount_accessor, context.authMount),
      metadata: null,
      creation_time: alias.creation_time,
      last_update_time: alias.last_update_time,
      merged_from_canonical_ids: null,
      namespace_id: context.namespaceId,
    };
  }

  async function shownGroup(group: Group | null): Promise<Response | undefined> {
    if (!group) return undefined;
    const alias = await groups.alias(group.alias_id);
    const { alias_id: _aliasId, ...shown } = group;
    return { data: { ...shown, alias: alias ? aliasData(alias) : {}, namespace_id: context.namespaceId } };
  }

  async function aliasChanges(f: FieldData, creating: boolean): Promise<GroupAliasChanges> {
    const name = given<string>(f, 'name');
    if (creating && !name) throw ServiceError.badRequest('missing required field "name"');
    if (name === '') throw ServiceError.badRequest('field "name" cannot be empty');
    const accessor = aliasMountAccessor(f, creating, context.authMount);
    const canonicalId = given<string>(f, 'canonical_id');
    if (creating && !canonicalId) throw ServiceError.badRequest('missing required field "canonical_id"');
    return { name: withinLimit('name', name), mount_accessor: accessor, canonical_id: canonicalId || undefined };
  }

  return [
    ...objectPaths({
      kind: 'group',
      fields: GROUP_FIELDS,
      deletion: 'Delete a group and its alias.',
      changes: groupChanges,
      upsert: (changes, id) => groups.upsertGroup(changes, id),
      update: (id, changes) => groups.updateGroup(id, changes),
      remove: (id) => groups.deleteGroup(id),
      byId: (id) => groups.group(id),
      byName: (name) => groups.groupByName(name),
      ids: () => groups.groupIds(),
      names: () => groups.groupNames(),
      keyInfo: (group) => ({ name: group.name, num_member_entities: group.member_entity_ids.length, num_parent_groups: group.parent_group_ids.length }),
      shown: shownGroup,
    }),
    ...aliasPaths({
      kind: 'group-alias',
      owner: 'an external group',
      fields: GROUP_ALIAS_FIELDS,
      changes: aliasChanges,
      create: (changes, id) => groups.createAlias(changes as Required<GroupAliasChanges>, id),
      update: (id, changes) => groups.updateAlias(id, changes),
      remove: (id) => groups.deleteAlias(id),
      byId: (id) => groups.alias(id),
      ids: () => groups.aliasIds(),
      data: aliasData,
    }),
    lookupPath('group', {
      byId: (id) => groups.group(id),
      byName: (name) => groups.groupByName(name),
      aliasById: (id) => groups.alias(id),
      aliasByName: (accessor, name) => groups.aliasByName(accessor, name),
      shown: shownGroup,
    }),
  ];
}
