import { Backend, listResponse, type FieldData, type FieldMap, type MountInfo, type Response } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { MAX_NAME_BYTES, withinNameLimit, type AliasChanges, type Entity, type EntityAlias, type EntityChanges, type IdentityStore } from './identity-store';

/** What the backend needs of the namespace beyond its store: its auth mounts, by accessor. */
export interface IdentityContext {
  store: IdentityStore;
  namespaceId: string;
  authMount(accessor: string): MountInfo | undefined;
}

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
const ID: FieldMap = { id: { type: 'string', description: 'Id of the object.' } };
const ENTITY_NAME: FieldMap = { name: { type: 'string', description: 'Name of the entity.' } };

/** A name or id the storage keys can hold, else a 400 naming its field. */
function withinLimit<T extends string | undefined>(field: string, value: T): T {
  if (value !== undefined && !withinNameLimit(value)) throw ServiceError.badRequest(`field "${field}": longer than ${MAX_NAME_BYTES} bytes`);
  return value;
}

function entityChanges(f: FieldData, withName: boolean): EntityChanges {
  const given = <T>(name: string): T | undefined => (f.has(name) ? f.get<T>(name) : undefined);
  return {
    name: withName ? withinLimit('name', given<string>('name')) : undefined,
    metadata: given('metadata'),
    policies: given<string[]>('policies')?.map((policy) => policy.trim()).filter(Boolean),
    disabled: given('disabled'),
  };
}

/** The id a client chose for a new object, if any: one storage key segment, as generated ids are. */
function chosenId(f: FieldData): string | undefined {
  const id = f.has('id') ? f.get<string>('id') : '';
  if (id === '') return undefined;
  if (id.includes('/') || id === '..') throw ServiceError.badRequest('field "id": must not contain "/" or be ".."');
  return withinLimit('id', id);
}

function written(entity: Entity): Response {
  return { data: { id: entity.id, name: entity.name } };
}

/**
 * identity/: the namespace's entities and entity aliases, as Vault's identity secrets engine
 * serves them (without groups, which nothing here uses yet).
 */
export function createIdentityBackend(context: IdentityContext): Backend {
  const { store } = context;

  function aliasData(alias: EntityAlias): Record<string, unknown> {
    const mount = context.authMount(alias.mount_accessor);
    return {
      id: alias.id,
      name: alias.name,
      canonical_id: alias.canonical_id,
      mount_accessor: alias.mount_accessor,
      mount_path: mount ? `auth/${mount.path}` : '',
      mount_type: mount?.type ?? '',
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
    const aliases = await store.aliasesOf(entity);
    return {
      data: {
        id: entity.id,
        name: entity.name,
        metadata: entity.metadata,
        policies: entity.policies,
        disabled: entity.disabled,
        aliases: aliases.map(aliasData),
        direct_group_ids: [],
        group_ids: [],
        inherited_group_ids: [],
        merged_entity_ids: null,
        creation_time: entity.creation_time,
        last_update_time: entity.last_update_time,
        namespace_id: context.namespaceId,
      },
    };
  }

  const shownEntity = async (entity: Entity | null): Promise<Response | undefined> => (entity ? entityData(entity) : undefined);

  function mountAccessor(f: FieldData, required: boolean): string | undefined {
    if (!f.has('mount_accessor')) {
      if (required) throw ServiceError.badRequest('missing required field "mount_accessor"');
      return undefined;
    }
    const accessor = f.get<string>('mount_accessor');
    if (!context.authMount(accessor)) throw ServiceError.badRequest(`field "mount_accessor": no auth mount has accessor "${accessor}"`);
    return accessor;
  }

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
      mount_accessor: mountAccessor(f, creating),
      canonical_id: await canonicalId(f),
      custom_metadata: f.has('custom_metadata') ? f.get('custom_metadata') : undefined,
    };
  }

  /** identity/lookup/entity: exactly one way of naming the entity. */
  async function lookup(f: FieldData): Promise<Response | undefined> {
    const given = ['id', 'name', 'alias_id', 'alias_name'].filter((field) => f.has(field) && f.get<string>(field) !== '');
    if (given.length !== 1) throw ServiceError.badRequest('give exactly one of "id", "name", "alias_id", or "alias_name" with "alias_mount_accessor"');
    switch (given[0]) {
      case 'id':
        return shownEntity(await store.entity(f.get('id')));
      case 'name':
        return shownEntity(await store.entityByName(f.get('name')));
      case 'alias_id': {
        const alias = await store.alias(f.get('alias_id'));
        return shownEntity(alias && (await store.entity(alias.canonical_id)));
      }
      default: {
        if (!f.has('alias_mount_accessor')) throw ServiceError.badRequest('missing required field "alias_mount_accessor" (with "alias_name")');
        const alias = await store.aliasByName(f.get('alias_mount_accessor'), f.get('alias_name'));
        return shownEntity(alias && (await store.entity(alias.canonical_id)));
      }
    }
  }

  return new Backend({
    type: 'identity',
    help: 'The identity store: entities (clients) and their aliases (the names auth methods know them by).',
    paths: [
      {
        pattern: 'entity',
        synopsis: 'Creates an entity, or updates the one of the given id or name.',
        fields: { ...ENTITY_FIELDS, ...ID },
        operations: {
          update: {
            summary: 'Create or update an entity.',
            handler: async (_req, f) => written(await store.upsertEntity(entityChanges(f, true), chosenId(f))),
          },
        },
      },
      {
        pattern: 'entity/id/',
        synopsis: 'Lists the entities by id.',
        operations: {
          list: {
            summary: 'List entity ids.',
            handler: async () => {
              const ids = await store.entityIds();
              const entities = await Promise.all(ids.map((id) => store.entity(id)));
              const keyInfo = Object.fromEntries(entities.flatMap((entity) => (entity ? [[entity.id, { name: entity.name }]] : [])));
              return listResponse(ids, keyInfo);
            },
          },
        },
      },
      {
        pattern: 'entity/id/:id',
        synopsis: 'Reads, updates or deletes an entity by id.',
        fields: { ...ENTITY_FIELDS, ...ID },
        operations: {
          read: { summary: 'Read an entity.', handler: async (_req, f) => shownEntity(await store.entity(f.params.id)) },
          update: { summary: 'Update an entity.', handler: async (_req, f) => written(await store.updateEntity(f.params.id, entityChanges(f, true))) },
          delete: {
            summary: 'Delete an entity and its aliases.',
            handler: async (_req, f) => {
              await store.deleteEntity(f.params.id);
              return undefined;
            },
          },
        },
      },
      {
        pattern: 'entity/name/',
        synopsis: 'Lists the entities by name.',
        operations: { list: { summary: 'List entity names.', handler: async () => listResponse(await store.entityNames()) } },
      },
      {
        pattern: 'entity/name/:name',
        synopsis: 'Reads, updates or deletes an entity by name.',
        fields: { ...ENTITY_FIELDS, ...ENTITY_NAME },
        operations: {
          read: { summary: 'Read an entity.', handler: async (_req, f) => shownEntity(await store.entityByName(f.params.name)) },
          update: {
            summary: 'Create or update the entity of this name.',
            handler: async (_req, f) => written(await store.upsertEntity({ ...entityChanges(f, false), name: withinLimit('name', f.params.name) })),
          },
          delete: {
            summary: 'Delete an entity and its aliases.',
            handler: async (_req, f) => {
              const entity = await store.entityByName(f.params.name);
              if (entity) await store.deleteEntity(entity.id);
              return undefined;
            },
          },
        },
      },
      {
        pattern: 'entity-alias',
        synopsis: 'Creates an entity alias.',
        fields: { ...ALIAS_FIELDS, ...ID },
        operations: {
          update: {
            summary: 'Create an entity alias.',
            handler: async (_req, f) => {
              const changes = await aliasChanges(f, true);
              const alias = await store.createAlias({ ...changes, name: changes.name!, mount_accessor: changes.mount_accessor! }, chosenId(f));
              return { data: { id: alias.id, canonical_id: alias.canonical_id } };
            },
          },
        },
      },
      {
        pattern: 'entity-alias/id/',
        synopsis: 'Lists the entity aliases by id.',
        operations: {
          list: {
            summary: 'List entity alias ids.',
            handler: async () => {
              const ids = await store.aliasIds();
              const aliases = await Promise.all(ids.map((id) => store.alias(id)));
              const keyInfo = Object.fromEntries(
                aliases.flatMap((alias) => {
                  if (!alias) return [];
                  const { canonical_id, mount_accessor, mount_path, mount_type, name } = aliasData(alias);
                  return [[alias.id, { canonical_id, mount_accessor, mount_path, mount_type, name }]];
                }),
              );
              return listResponse(ids, keyInfo);
            },
          },
        },
      },
      {
        pattern: 'entity-alias/id/:id',
        synopsis: 'Reads, updates or deletes an entity alias by id.',
        fields: { ...ALIAS_FIELDS, ...ID },
        operations: {
          read: {
            summary: 'Read an entity alias.',
            handler: async (_req, f) => {
              const alias = await store.alias(f.params.id);
              return alias ? { data: aliasData(alias) } : undefined;
            },
          },
          update: {
            summary: 'Update an entity alias.',
            handler: async (_req, f) => {
              const alias = await store.updateAlias(f.params.id, await aliasChanges(f, false));
              return { data: { id: alias.id, canonical_id: alias.canonical_id } };
            },
          },
          delete: {
            summary: 'Delete an entity alias.',
            handler: async (_req, f) => {
              await store.deleteAlias(f.params.id);
              return undefined;
            },
          },
        },
      },
      {
        pattern: 'lookup/entity',
        synopsis: 'Finds an entity by id, name, alias id, or alias name and mount accessor.',
        fields: {
          ...ID,
          ...ENTITY_NAME,
          alias_id: { type: 'string', description: 'Id of one of the entity\'s aliases.' },
          alias_name: { type: 'string', description: 'Name of one of the entity\'s aliases (with alias_mount_accessor).' },
          alias_mount_accessor: { type: 'string', description: 'Accessor of the auth mount of alias_name.' },
        },
        operations: { update: { summary: 'Look up an entity.', handler: async (_req, f) => lookup(f) } },
      },
    ],
  });
}
