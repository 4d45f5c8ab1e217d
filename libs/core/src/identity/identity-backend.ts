import { Backend, type FieldData, type FieldMap, type Response } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { type AliasChanges, type Entity, type EntityAlias, type EntityChanges } from './identity-store';
import { aliasMount, aliasMountAccessor, aliasPaths, given, lookupPath, namedObjectChanges, objectPaths, withinLimit } from './identity-fields';
import type { IdentityContext } from './identity-fields';
import { groupPaths } from './group-paths';

export type { IdentityContext } from './identity-fields';

const ENTITY_FIELDS: FieldMap = {
  name: { type: 'string', description: 'Name of the entity (generated when absent).' },
  metadata: { type: 'kv-pairs', description: 'Key/value metadata of the entity.' },
  policies: { type: 'comma-string-list', description: 'Policies the entity\'s tokens have besides their own.' },
  disabled: { type: 'bool', description: 'Refuses the entity\'s logins and stops its tokens working.' },
};
const ALIAS_FIELDS: FieldMap = {
  name: { type: 'string', description: 'Name of the alias: the name the auth method knows the client by.' },
  mount_accessor: { type: 'string', description: 'Accessor of the auth mount the alias belongs to.' },
  canonical_id: { type: 'string', description: 'Id of the entity the alias belongs to.' },
  custom_metadata: { type: 'kv-pairs', description: 'Key/value metadata set by operators (logins do not change it).' },
};

function entityChanges(f: FieldData, withName: boolean): EntityChanges {
  return {
    ...namedObjectChanges(f, withName),
    disabled: given(f, 'disabled'),
  };
}

/**
 * identity/: the namespace's entities, groups and their aliases, as Vault's identity secrets
 * engine serves them.
 */
export function createIdentityBackend(context: IdentityContext): Backend {
  const { store } = context;

  function aliasData(alias: EntityAlias): Record<string, unknown> {
    return {
      id: alias.id,
      name: alias.name,
      canonical_id: alias.canonical_id,
      mount_accessor: alias.mount_accessor,
      ...aliasMount(alias.mount_accessor, context.authMount),
      metadata: alias.metadata,
      custom_metadata: alias.custom_metadata,
      creation_time: alias.creation_time,
      last_update_time: alias.last_update_time,
      merged_from_canonical_ids: null,
      namespace_id: context.namespaceId,
      local: false,
    };
  }

  async function entityData(entity: Entity): Promise<Response> {
    const [aliases, groups] = await Promise.all([store.aliasesOf(entity), store.groups.memberships(entity.id)]);
    return {
      data: {
        id: entity.id,
        name: entity.name,
        metadata: entity.metadata,
        policies: entity.policies,
        disabled: entity.disabled,
        aliases: aliases.map(aliasData),
        direct_group_ids: groups.direct,
        group_ids: [...groups.direct, ...groups.inherited],
        inherited_group_ids: groups.inherited,
        merged_entity_ids: null,
        creation_time: entity.creation_time,
        last_update_time: entity.last_update_time,
        namespace_id: context.namespaceId,
      },
    };
  }

  const shownEntity = async (entity: Entity | null): Promise<Response | undefined> => (entity ? entityData(entity) : undefined);

  async function canonicalId(f: FieldData): Promise<string | undefined> {
    const id = f.has('canonical_id') ? f.get<string>('canonical_id') : '';
    if (id === '') return undefined;
    if (!(await store.entity(id))) throw ServiceError.badRequest(`field "canonical_id": entity "${id}" does not exist`);
    return id;
  }

  async function aliasChanges(f: FieldData, creating: boolean): Promise<AliasChanges> {
    const name = f.has('name') ? f.get<string>('name') : undefined;
    if (creating && !name) throw ServiceError.badRequest('missing required field "name"');
    if (name === '') throw ServiceError.badRequest('field "name" cannot be empty');
    return {
      name: withinLimit('name', name),
      mount_accessor: aliasMountAccessor(f, creating, context.authMount),
      canonical_id: await canonicalId(f),
      custom_metadata: f.has('custom_metadata') ? f.get('custom_metadata') : undefined,
    };
  }

  return new Backend({
    type: 'identity',
    help: 'The identity store: entities (clients), groups of them, and their aliases (the names auth methods know them by).',
    paths: [
      ...objectPaths({
        kind: 'entity',
        fields: ENTITY_FIELDS,
        deletion: 'Delete an entity and its aliases.',
        changes: entityChanges,
        upsert: (changes, id) => store.upsertEntity(changes, id),
        update: (id, changes) => store.updateEntity(id, changes),
        remove: (id) => store.deleteEntity(id),
        byId: (id) => store.entity(id),
        byName: (name) => store.entityByName(name),
        ids: () => store.entityIds(),
        names: () => store.entityNames(),
        keyInfo: (entity) => ({ name: entity.name }),
        shown: shownEntity,
      }),
      ...aliasPaths({
        kind: 'entity-alias',
        owner: 'an entity',
        fields: ALIAS_FIELDS,
        changes: aliasChanges,
        create: (changes, id) => store.createAlias({ ...changes, name: changes.name!, mount_accessor: changes.mount_accessor! }, id),
        update: (id, changes) => store.updateAlias(id, changes),
        remove: (id) => store.deleteAlias(id),
        byId: (id) => store.alias(id),
        ids: () => store.aliasIds(),
        data: aliasData,
      }),
      lookupPath('entity', {
        byId: (id) => store.entity(id),
        byName: (name) => store.entityByName(name),
        aliasById: (id) => store.alias(id),
        aliasByName: (accessor, name) => store.aliasByName(accessor, name),
        shown: shownEntity,
      }),
      ...groupPaths(context),
    ],
  });
}
