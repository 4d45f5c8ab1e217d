import { listResponse, type FieldData, type FieldMap, type MountInfo, type PathDeclaration, type Response } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { MAX_NAME_BYTES, withinNameLimit } from './identity-records';
import type { IdentityStore } from './identity-store';

/** A name or id the storage keys can hold, else a 400 naming its field. */
export function withinLimit<T extends string | undefined>(field: string, value: T): T {
  if (value !== undefined && !withinNameLimit(value)) throw ServiceError.badRequest(`field "${field}": longer than ${MAX_NAME_BYTES} bytes`);
  return value;
}

/** A field's value when the client sent it (an absent field keeps what is stored). */
export function given<T>(f: FieldData, name: string): T | undefined {
  return f.has(name) ? f.get<T>(name) : undefined;
}

/** The id a client chose for a new object, if any: one storage key segment, as generated ids are. */
export function chosenId(f: FieldData): string | undefined {
  const id = f.has('id') ? f.get<string>('id') : '';
  if (id === '') return undefined;
  if (id.includes('/') || id === '..') throw ServiceError.badRequest('field "id": must not contain "/" or be ".."');
  return withinLimit('id', id);
}

/** The fields of identity/lookup/<kind>: one way of naming the object. */
function lookupFields(kind: string): FieldMap {
  return {
    id: { type: 'string', description: `Id of the ${kind}.` },
    name: { type: 'string', description: `Name of the ${kind}.` },
    alias_id: { type: 'string', description: `Id of one of the ${kind}'s aliases.` },
    alias_name: { type: 'string', description: `Name of one of the ${kind}'s aliases (with alias_mount_accessor).` },
    alias_mount_accessor: { type: 'string', description: 'Accessor of the auth mount of alias_name.' },
  };
}

/** How a store finds an object and its aliases, for identity/lookup/<kind>. */
export interface LookupFinders<T, A extends { canonical_id: string }> {
  byId(id: string): Promise<T | null>;
  byName(name: string): Promise<T | null>;
  aliasById(id: string): Promise<A | null>;
  aliasByName(mountAccessor: string, name: string): Promise<A | null>;
  shown(found: T | null): Promise<Response | undefined>;
}

/** identity/lookup/<kind>: exactly one way of naming the object; an unknown one answers nothing. */
async function lookupOne<T, A extends { canonical_id: string }>(f: FieldData, finders: LookupFinders<T, A>): Promise<Response | undefined> {
  const named = ['id', 'name', 'alias_id', 'alias_name'].filter((field) => f.has(field) && f.get<string>(field) !== '');
  if (named.length !== 1) throw ServiceError.badRequest('give exactly one of "id", "name", "alias_id", or "alias_name" with "alias_mount_accessor"');
  switch (named[0]) {
    case 'id':
      return finders.shown(await finders.byId(f.get('id')));
    case 'name':
      return finders.shown(await finders.byName(f.get('name')));
    case 'alias_id': {
      const alias = await finders.aliasById(f.get('alias_id'));
      return finders.shown(alias && (await finders.byId(alias.canonical_id)));
    }
    default: {
      if (!f.has('alias_mount_accessor')) throw ServiceError.badRequest('missing required field "alias_mount_accessor" (with "alias_name")');
      const alias = await finders.aliasByName(f.get('alias_mount_accessor'), f.get('alias_name'));
      return finders.shown(alias && (await finders.byId(alias.canonical_id)));
    }
  }
}

/** An identity object (entity or group) as its paths need it: by id and by name. */
export interface IdentityObjectKind<T extends { id: string; name: string }, C> {
  /** "entity" or "group": the paths are <kind>, <kind>/id/:id and <kind>/name/:name. */
  kind: string;
  fields: FieldMap;
  /** The summary of its deletion, e.g. "Delete an entity and its aliases." */
  deletion: string;
  changes(f: FieldData, withName: boolean): C;
  upsert(changes: C, id?: string): Promise<T>;
  update(id: string, changes: C): Promise<T>;
  remove(id: string): Promise<void>;
  byId(id: string): Promise<T | null>;
  byName(name: string): Promise<T | null>;
  ids(): Promise<string[]>;
  names(): Promise<string[]>;
  /** What a list by id shows of each. */
  keyInfo(found: T): Record<string, unknown>;
  shown(found: T | null): Promise<Response | undefined>;
}

const ID: FieldMap = { id: { type: 'string', description: 'Id of the object.' } };

/** <kind>, <kind>/id/[:id] and <kind>/name/[:name]: create, read, update, delete and list by id or name. */
export function objectPaths<T extends { id: string; name: string }, C>(kind: IdentityObjectKind<T, C>): PathDeclaration[] {
  const written = (found: T): Response => ({ data: { id: found.id, name: found.name } });
    const nameField: FieldMap = { name: { type: 'string', description: `Name of the ${kind.kind}.` } };
  return [
    {
      pattern: kind.kind,
      synopsis: `Creates ${withArticle(kind.kind)}, or updates the one of the given id or name.`,
      fields: { ...kind.fields, ...ID },
      operations: { update: { summary: `Create or update ${withArticle(kind.kind)}.`, handler: async (_req, f) => written(await kind.upsert(kind.changes(f, true), chosenId(f))) } },
    },
    {
      pattern: `${kind.kind}/id/`,
      synopsis: `Lists the ${kind.kind} ids.`,
      operations: {
        list: {
          summary: `List ${kind.kind} ids.`,
          handler: async () => {
            const ids = await kind.ids();
            const found = await Promise.all(ids.map((id) => kind.byId(id)));
            return listResponse(ids, Object.fromEntries(found.flatMap((object) => (object ? [[object.id, kind.keyInfo(object)]] : []))));
          },
        },
      },
    },
    {
      pattern: `${kind.kind}/id/:id`,
      synopsis: `Reads, updates or deletes ${withArticle(kind.kind)} by id.`,
      fields: { ...kind.fields, ...ID },
      operations: {
        read: { summary: `Read ${withArticle(kind.kind)}.`, handler: async (_req, f) => kind.shown(await kind.byId(f.params.id)) },
        update: { summary: `Update ${withArticle(kind.kind)}.`, handler: async (_req, f) => written(await kind.update(f.params.id, kind.changes(f, true))) },
        delete: { summary: kind.deletion, handler: (_req, f) => done(kind.remove(f.params.id)) },
      },
    },
    {
      pattern: `${kind.kind}/name/`,
      synopsis: `Lists the ${kind.kind} names.`,
      operations: { list: { summary: `List ${kind.kind} names.`, handler: async () => listResponse(await kind.names()) } },
    },
    {
      pattern: `${kind.kind}/name/:name`,
      synopsis: `Reads, updates or deletes ${withArticle(kind.kind)} by name.`,
      fields: { ...kind.fields, ...nameField },
      operations: {
        read: { summary: `Read ${withArticle(kind.kind)}.`, handler: async (_req, f) => kind.shown(await kind.byName(f.params.name)) },
        update: {
          summary: `Create or update the ${kind.kind} of this name.`,
          handler: async (_req, f) => written(await kind.upsert({ ...kind.changes(f, false), name: withinLimit('name', f.params.name) })),
        },
        delete: {
          summary: kind.deletion,
          handler: async (_req, f) => {
            const found = await kind.byName(f.params.name);
            return found ? done(kind.remove(found.id)) : undefined;
          },
        },
      },
    },
  ];
}

/** An alias kind (entity alias or group alias) as its paths need it. */
export interface IdentityAliasKind<A extends { id: string; canonical_id: string }, C> {
  /** "entity-alias" or "group-alias". */
  kind: string;
  /** What the alias names, for help: "an entity", "an external group". */
  owner: string;
  fields: FieldMap;
  changes(f: FieldData, creating: boolean): Promise<C>;
  create(changes: C, id?: string): Promise<A>;
  update(id: string, changes: C): Promise<A>;
  remove(id: string): Promise<void>;
  byId(id: string): Promise<A | null>;
  ids(): Promise<string[]>;
  data(alias: A): Record<string, unknown>;
}

/** <kind>, <kind>/id/ and <kind>/id/:id: create, list, read, update and delete aliases. */
export function aliasPaths<A extends { id: string; canonical_id: string }, C>(kind: IdentityAliasKind<A, C>): PathDeclaration[] {
  const written = (alias: A): Response => ({ data: { id: alias.id, canonical_id: alias.canonical_id } });
  const label = kind.kind.replace('-', ' ');
  return [
    {
      pattern: kind.kind,
      synopsis: `Creates ${withArticle(label)}: the name an auth mount knows ${kind.owner} by.`,
      fields: { ...kind.fields, ...ID },
      operations: { update: { summary: `Create ${withArticle(label)}.`, handler: async (_req, f) => written(await kind.create(await kind.changes(f, true), chosenId(f))) } },
    },
    {
      pattern: `${kind.kind}/id/`,
      synopsis: `Lists the ${label}es by id.`,
      operations: {
        list: {
          summary: `List ${label} ids.`,
          handler: async () => {
            const ids = await kind.ids();
            const found = await Promise.all(ids.map((id) => kind.byId(id)));
            const keyInfo = found.flatMap((alias) => {
              if (!alias) return [];
              const { canonical_id, mount_accessor, mount_path, mount_type, name } = kind.data(alias);
              return [[alias.id, { canonical_id, mount_accessor, mount_path, mount_type, name }]];
            });
            return listResponse(ids, Object.fromEntries(keyInfo));
          },
        },
      },
    },
    {
      pattern: `${kind.kind}/id/:id`,
      synopsis: `Reads, updates or deletes ${withArticle(label)} by id.`,
      fields: { ...kind.fields, ...ID },
      operations: {
        read: {
          summary: `Read ${withArticle(label)}.`,
          handler: async (_req, f) => {
            const alias = await kind.byId(f.params.id);
            return alias ? { data: kind.data(alias) } : undefined;
          },
        },
        update: { summary: `Update ${withArticle(label)}.`, handler: async (_req, f) => written(await kind.update(f.params.id, await kind.changes(f, false))) },
        delete: { summary: `Delete ${withArticle(label)}.`, handler: (_req, f) => done(kind.remove(f.params.id)) },
      },
    },
  ];
}

/** identity/lookup/<kind>. */
export function lookupPath<T, A extends { canonical_id: string }>(kind: string, finders: LookupFinders<T, A>): PathDeclaration {
  return {
    pattern: `lookup/${kind}`,
    synopsis: `Finds ${withArticle(kind)} by id, name, alias id, or alias name and mount accessor.`,
    fields: lookupFields(kind),
    operations: { update: { summary: `Look up ${withArticle(kind)}.`, handler: (_req, f) => lookupOne(f, finders) } },
  };
}

async function done(work: Promise<void>): Promise<undefined> {
  await work;
  return undefined;
}

/** "an entity", "a group". */
function withArticle(noun: string): string {
  return `${/^[aeiou]/.test(noun) ? 'an' : 'a'} ${noun}`;
}

/** Finds an auth mount by accessor. */
export type AuthMountOf = (accessor: string) => MountInfo | undefined;

/** What the identity backend needs of the namespace beyond its store: its auth mounts, by accessor. */
export interface IdentityContext {
  store: IdentityStore;
  namespaceId: string;
  authMount: AuthMountOf;
}

/** An alias's mount_accessor field: that of an enabled auth mount, else a 400. */
export function aliasMountAccessor(f: FieldData, required: boolean, authMount: AuthMountOf): string | undefined {
  if (!f.has('mount_accessor')) {
    if (required) throw ServiceError.badRequest('missing required field "mount_accessor"');
    return undefined;
  }
  const accessor = f.get<string>('mount_accessor');
  if (!authMount(accessor)) throw ServiceError.badRequest(`field "mount_accessor": no auth mount has accessor "${accessor}"`);
  return accessor;
}

/** How an alias shows its mount: path and type ('' when the mount is gone). */
export function aliasMount(accessor: string, authMount: AuthMountOf): { mount_path: string; mount_type: string } {
  const mount = authMount(accessor);
  return { mount_path: mount ? `auth/${mount.path}` : '', mount_type: mount?.type ?? '' };
}

/** The changes entities and groups share: name (unless the path names it), metadata, policies. */
export function namedObjectChanges(f: FieldData, withName: boolean): { name?: string; metadata?: Record<string, string>; policies?: string[] } {
  return {
    name: withName ? withinLimit('name', given<string>(f, 'name')) : undefined,
    metadata: given(f, 'metadata'),
    policies: given<string[]>(f, 'policies')?.map((policy) => policy.trim()).filter(Boolean),
  };
}
