import type { FieldData, FieldMap, FieldSchema, MountInfo, PathDeclaration, Request, Response } from '@svc/framework';
import { listResponse, normalizeMountPath, responseData } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { mountStoragePrefix, type EngineReply } from '@svc/engine-host';
import { createView, readJson, writeJson, type Transaction, type TransactionalStore } from '@svc/storage';
import { associationKey, DESTINATION_TYPES, destinationId, GRANULARITIES, IN_PROGRESS, PROVIDER_CALL_DEADLINE_MS, SYNC_KEYS, SyncRecords, type Association, type AssociationMap, type Destination, type DestinationType } from './model';
import { CONNECTION_FIELDS, obfuscated } from './destinations';
import { currentStatus, markAssociated, queueFirstSync, queueKey, queueRemoval, readEntry } from './outbox';
import { defaultGranularity, nameFields, providerSecretName, SecretNameError } from './names';

/**
 * What sys/sync needs of the core (which implements it): the barrier (the sync records, and the
 * outbox in each KV mount's storage), the secrets mounts of the request's namespace, whether the
 * caller may read a path, and a read through a mount's engine.
 */
export interface SyncPathsDeps {
  barrier: TransactionalStore;
  /** The secrets engine mounted at `path` (as mount tables hold it) in the request's namespace. */
  secretMount(req: Request, path: string): MountInfo | undefined;
  /** Whether the request's caller may read `path` (a path of the request's namespace). */
  mayRead(req: Request, path: string): Promise<boolean>;
  /** Reads `path` of `mount` through the mount's engine, with root's capabilities. */
  readThrough(req: Request, mount: MountInfo, path: string): Promise<EngineReply>;
}

/**
 * How long `set` and `remove` wait for the sync worker's first outcome before answering with the
 * status as it stands: long enough for a provider that does not answer to be recorded as such.
 */
const FIRST_SYNC_WAIT_MS = PROVIDER_CALL_DEADLINE_MS + 5_000;
const FIRST_SYNC_POLL_MS = 25;

const OPTION_FIELDS: FieldMap = {
  granularity: { type: 'string', allowed: GRANULARITIES, description: 'How secrets are written: `secret-path` (the whole secret as one JSON value) or `secret-key` (one value per key).' },
  secret_name_template: { type: 'string', description: 'Template of the provider secret names (fields `.MountAccessor`, `.SecretPath`, `.SecretKey`, ...); applies to new associations.' },
  custom_tags: { type: 'kv-pairs', description: 'Tags or labels added to every secret this destination manages, where the provider has them.' },
};

const ASSOCIATION_FIELDS: FieldMap = {
  mount: { type: 'string', required: true, description: 'Path of the KV version 2 mount holding the secret.' },
  secret_name: { type: 'string', required: true, description: 'Path of the secret inside the mount.' },
};

function connectionSchema(type: DestinationType): FieldMap {
  return Object.fromEntries(
    Object.entries(CONNECTION_FIELDS[type]).map(([name, field]): [string, FieldSchema] => [
      name,
      {
        type: field.list ? 'comma-string-list' : 'string',
        description: field.description,
        ...(field.required ? { required: true } : {}),
        ...(field.sensitive ? { sensitive: true } : {}),
        ...(field.allowed && !field.list ? { allowed: field.allowed } : {}),
      },
    ]),
  );
}

/** sys/sync/*: destinations, their associations with KV version 2 secrets, and the association views. */
export function syncPaths(deps: SyncPathsDeps): PathDeclaration[] {
  const root = createView(deps.barrier, '');
  const records = new SyncRecords(root);

  const loadDestination = async (type: string, name: string): Promise<Destination> => {
    const destination = await records.destination(type, name);
    if (!destination) throw ServiceError.notFound(`destination ${destinationId(type, name)} does not exist`);
    return destination;
  };
  /** The association's status as it reads: SYNCED only once the provider holds the secret's latest version (currentStatus). */
  const asItStands = async (tx: Transaction, destination: string, association: Association): Promise<Association> => {
    const queued = await readEntry(tx, `${mountStoragePrefix({ uuid: association.mount_uuid })}${queueKey(association.secret_name)}`);
    return { ...association, sync_status: currentStatus(association.sync_status, queued, destination) };
  };
  const associationsOf = async (type: string, name: string): Promise<AssociationMap> => {
    const recorded = Object.entries(await records.associations(type, name));
    return root.transaction(async (tx) => {
      const current: AssociationMap = {};
      for (const [key, association] of recorded) current[key] = await asItStands(tx, destinationId(type, name), association);
      return current;
    });
  };

  const describeDestination = (destination: Destination): Response => ({
    data: {
      name: destination.name,
      type: destination.type,
      connection_details: obfuscated(destination.type, destination.connection_details),
      options: destination.options,
    },
  });

  const writeDestination = async (type: DestinationType, fields: FieldData): Promise<Response> => {
    const name = fields.params.name;
    const key = SYNC_KEYS.destination(type, name);
    const destination = await root.transaction(async (tx) => {
      await tx.lock(key);
      const existing = await readJson<Destination>(tx, key);
      const details: Record<string, unknown> = { ...existing?.connection_details };
      for (const [field, spec] of Object.entries(CONNECTION_FIELDS[type])) {
        if (!fields.has(field)) {
          if (!existing) details[field] = spec.list ? [] : (spec.default ?? '');
          continue;
        }
        const value = fields.get<unknown>(field);
        if (existing && spec.immutable && JSON.stringify(value) !== JSON.stringify(existing.connection_details[field])) {
          throw ServiceError.badRequest(`field "${field}" of a ${type} destination cannot be changed after it is created`);
        }
        if (spec.list) {
          const values = value as string[];
          if (spec.required && values.length === 0) throw ServiceError.badRequest(`field "${field}" must list at least one value`);
          const wrong = values.find((item) => spec.allowed && !spec.allowed.includes(item));
          if (wrong !== undefined) throw ServiceError.badRequest(`field "${field}": "${wrong}" is not one of ${spec.allowed?.join(', ')}`);
        }
        const problem = typeof value === 'string' && value !== '' ? spec.check?.(value) : undefined;
        if (problem) throw ServiceError.badRequest(`field "${field}" ${problem}`);
        details[field] = value;
      }
      const options = {
        granularity_level: fields.has('granularity') ? fields.get<Destination['options']['granularity_level']>('granularity') : (existing?.options.granularity_level ?? defaultGranularity(type)),
        secret_name_template: fields.has('secret_name_template') ? fields.get<string>('secret_name_template') : (existing?.options.secret_name_template ?? ''),
        custom_tags: fields.has('custom_tags') ? fields.get<Record<string, string>>('custom_tags') : (existing?.options.custom_tags ?? {}),
      };
      const next: Destination = { name, type, connection_details: details, options };
      // A template that cannot render is refused now rather than at every sync.
      secretNameFor(next, { namespace: '', mount: 'secret/', accessor: 'kv_0000', secretName: 'example' }, options.granularity_level === 'secret-key' ? 'key' : '');
      await writeJson(tx, key, next);
      return next;
    });
    return describeDestination(destination);
  };

  const destinationPaths = (type: DestinationType): PathDeclaration => {
    const write = (summary: string) => ({ summary, handler: (_req: Request, fields: FieldData) => writeDestination(type, fields) });
    return {
      pattern: `sync/destinations/${type}/:name`,
      synopsis: `Creates, reads, updates and deletes ${type} sync destinations.`,
      description: `Connection details of a ${type} destination; credentials are kept in the barrier and answered obfuscated.`,
      fields: { name: { type: 'name', description: 'Name of the destination, unique within its type.' }, ...connectionSchema(type), ...OPTION_FIELDS },
      existenceCheck: async (_req, fields) => (await root.get(SYNC_KEYS.destination(type, fields.params.name))) !== null,
      operations: {
        create: write(`Create a ${type} destination.`),
        update: write(`Update a ${type} destination; fields that name the external resource cannot change.`),
        read: { summary: 'Read the destination, credentials obfuscated.', handler: async (_req, fields) => describeDestination(await loadDestination(type, fields.params.name)) },
        delete: {
          summary: 'Delete the destination; refused while it manages associations.',
          handler: async (_req, fields) => {
            const name = fields.params.name;
            await root.transaction(async (tx) => {
              await tx.lock(SYNC_KEYS.destination(type, name));
              const associations = Object.keys((await readJson<AssociationMap>(tx, SYNC_KEYS.associations(type, name))) ?? {});
              if (associations.length > 0) {
                throw ServiceError.badRequest(`destination ${destinationId(type, name)} still manages ${associations.length} association(s); remove them first`);
              }
              await tx.delete(SYNC_KEYS.destination(type, name));
              await tx.delete(SYNC_KEYS.associations(type, name));
            });
            return undefined;
          },
        },
      },
    };
  };

  const associationView = (association: Association) => ({
    accessor: association.accessor,
    secret_name: association.secret_name,
    mount: association.mount,
    sync_status: association.sync_status,
    updated_at: association.updated_at,
    granularity: association.granularity,
    ...(association.last_error ? { error: association.last_error } : {}),
  });

  const associationsResponse = (destination: { type: string; name: string }, associations: AssociationMap): Response => {
    const associated: Record<string, unknown> = {};
    for (const [key, association] of Object.entries(associations)) {
      associated[key] = associationView(association);
      if (association.granularity !== 'secret-key') continue;
      for (const subKey of Object.keys(association.remote_names)) associated[`${key}/${subKey}`] = { ...associationView(association), sub_key: subKey };
    }
    return { data: { associated_secrets: associated, store_name: destination.name, store_type: destination.type } };
  };

  /** The KV version 2 mount `set` and `remove` name, in the request's namespace. */
  const kvMount = (req: Request, fields: FieldData): { mount: MountInfo; secretName: string } => {
    const mountPath = normalizeMountPath(fields.get<string>('mount'));
    const secretName = fields.get<string>('secret_name').replace(/^\/+|\/+$/g, '');
    if (secretName === '') throw ServiceError.badRequest('field "secret_name" must name a secret');
    const mount = deps.secretMount(req, mountPath);
    if (!mount) throw ServiceError.badRequest(`no mount at "${mountPath}"`);
    if (mount.type !== 'kv' || mount.options.version !== '2') {
      throw ServiceError.badRequest(`mount "${mountPath}" is not a KV version 2 mount; only KV version 2 secrets can be synced`);
    }
    return { mount, secretName };
  };

  const requireReadPermission = async (req: Request, mount: MountInfo, secretName: string) => {
    if (!(await deps.mayRead(req, `${mount.path}data/${secretName}`))) {
      throw ServiceError.forbidden(`permission denied to read the content of the secret ${secretName} in mount ${mount.path}`);
    }
  };

  /** The secret's current data, read through the KV engine; null when it has no live version. */
  const readSecret = async (req: Request, mount: MountInfo, secretName: string): Promise<Record<string, unknown> | null> => {
    const reply = await deps.readThrough(req, mount, `data/${secretName}`);
    if (!reply.ok) {
      if (reply.kind === 'not-found') return null;
      throw new ServiceError(reply.kind, reply.errors);
    }
    const data = responseData(reply.response)?.data;
    return reply.response?.status === 404 || typeof data !== 'object' || data === null ? null : (data as Record<string, unknown>);
  };

  /** Waits (bounded) until the worker has finished with the association: synced, failed or removed. */
  const settled = async (type: string, name: string, key: string): Promise<Association | undefined> => {
    const deadline = Date.now() + FIRST_SYNC_WAIT_MS;
    for (;;) {
      const association = (await associationsOf(type, name))[key];
      if (!association || !IN_PROGRESS.has(association.sync_status) || Date.now() > deadline) return association;
      await new Promise((resolve) => setTimeout(resolve, FIRST_SYNC_POLL_MS));
    }
  };

  const mountView = (mount: MountInfo) => createView(deps.barrier, mountStoragePrefix(mount));

  const setAssociation = async (req: Request, fields: FieldData): Promise<Response> => {
    const { type, name } = fields.params;
    const destination = await loadDestination(type, name);
    const { mount, secretName } = kvMount(req, fields);
    await requireReadPermission(req, mount, secretName);
    if ((await readSecret(req, mount, secretName)) === null) throw ServiceError.badRequest('Secret not found. Please provide full path to existing secret');
    const secret = { namespace: mount.namespace, mount: mount.path, accessor: mount.accessor, secretName };
    const granularity = destination.options.granularity_level;
    secretNameFor(destination, secret, granularity === 'secret-key' ? 'key' : '');
    const id = destinationId(type, name);
    const key = associationKey(mount.accessor, secretName);
    await records.updateAssociation(type, name, key, (current) => ({
      accessor: mount.accessor,
      mount: mount.path,
      namespace: mount.namespace,
      mount_uuid: mount.uuid,
      secret_name: secretName,
      sync_status: 'PENDING',
      updated_at: new Date().toISOString(),
      granularity: current?.granularity ?? granularity,
      secret_name_template: current?.secret_name_template ?? destination.options.secret_name_template,
      remote_names: current?.remote_names ?? {},
    }));
    const view = mountView(mount);
    await view.transaction((tx) => markAssociated(tx, secretName, id));
    // Read after the mark: any change from here on queues itself, so this value is never newer than what follows.
    const data = await readSecret(req, mount, secretName);
    await view.transaction((tx) => queueFirstSync(tx, secretName, id, data ?? {}));
    await settled(type, name, key);
    return associationsResponse(destination, await associationsOf(type, name));
  };

  const removeAssociation = async (req: Request, fields: FieldData): Promise<Response> => {
    const { type, name } = fields.params;
    const destination = await loadDestination(type, name);
    const { mount, secretName } = kvMount(req, fields);
    const key = associationKey(mount.accessor, secretName);
    const existing = (await associationsOf(type, name))[key];
    if (existing) {
      await records.updateAssociation(type, name, key, (current) => ({ ...(current ?? existing), sync_status: 'UNSYNCING', updated_at: new Date().toISOString() }));
      await mountView(mount).transaction((tx) => queueRemoval(tx, secretName, destinationId(type, name)));
    }
    const remaining = await settled(type, name, key);
    const associations = await associationsOf(type, name);
    const removed: Association = remaining ?? {
      ...(existing ?? { accessor: mount.accessor, mount: mount.path, namespace: mount.namespace, mount_uuid: mount.uuid, secret_name: secretName, granularity: destination.options.granularity_level, secret_name_template: '', remote_names: {} }),
      sync_status: 'UNSYNCED',
      updated_at: new Date().toISOString(),
      remote_names: {},
    };
    return associationsResponse(destination, { ...associations, [key]: removed });
  };

  const destinationsOfSecret = async (req: Request, mountParam: string, secretParam: string): Promise<Response> => {
    const mountPath = normalizeMountPath(mountParam);
    const secretName = secretParam.replace(/^\/+|\/+$/g, '');
    const mount = deps.secretMount(req, mountPath);
    const linked = (await records.allAssociations()).filter(({ association }) => mount && association.mount_uuid === mount.uuid && association.secret_name === secretName);
    const destinations = await root.transaction(async (tx) => {
      const found: Record<string, unknown> = {};
      for (const { type, name, association: recorded } of linked) {
        const association = await asItStands(tx, destinationId(type, name), recorded);
        found[destinationId(type, name)] = { type, name, sync_status: association.sync_status, updated_at: association.updated_at, ...(association.last_error ? { error: association.last_error } : {}) };
      }
      return found;
    });
    return { data: { associated_destinations: destinations } };
  };

  return [
    {
      pattern: 'sync/destinations/',
      synopsis: 'Lists sync destinations of every type.',
      operations: {
        list: {
          summary: 'List destinations, grouped by type.',
          handler: async () => {
            const keyInfo: Record<string, string[]> = {};
            let total = 0;
            for (const type of DESTINATION_TYPES) {
              const names = await records.destinationNames(type);
              if (names.length === 0) continue;
              keyInfo[`${type}/`] = names;
              total += names.length;
            }
            const response = listResponse(Object.keys(keyInfo), keyInfo);
            return { data: { ...response.data, total_destinations: total } };
          },
        },
      },
    },
    {
      pattern: 'sync/destinations/:type/',
      synopsis: 'Lists the sync destinations of one type.',
      fields: { type: { type: 'string', allowed: DESTINATION_TYPES, description: 'Destination type.' } },
      operations: {
        list: {
          summary: 'List the destinations of a type.',
          handler: async (_req, fields) => {
            const names = await records.destinationNames(fields.params.type);
            return { data: { keys: names, total_destinations: names.length } };
          },
        },
      },
    },
    ...DESTINATION_TYPES.map(destinationPaths),
    {
      pattern: 'sync/destinations/:type/:name/associations',
      synopsis: 'Reads the secrets associated with a destination.',
      operations: {
        read: {
          summary: 'Read the associations of the destination and their sync status.',
          handler: async (_req, fields) => {
            const destination = await loadDestination(fields.params.type, fields.params.name);
            return associationsResponse(destination, await associationsOf(destination.type, destination.name));
          },
        },
      },
    },
    {
      pattern: 'sync/destinations/:type/:name/associations/set',
      synopsis: 'Associates a KV version 2 secret with the destination and syncs it.',
      description: 'The caller must be able to read the secret. The first sync runs before the answer; on an existing association `set` syncs again (and so retries a failed sync).',
      fields: ASSOCIATION_FIELDS,
      operations: { update: { summary: 'Associate and sync a secret.', handler: setAssociation } },
    },
    {
      pattern: 'sync/destinations/:type/:name/associations/remove',
      synopsis: 'Removes an association and deletes the secret at the destination.',
      description: 'Succeeds also when the association or the provider copy is already gone.',
      fields: ASSOCIATION_FIELDS,
      operations: { update: { summary: 'Remove an association.', handler: removeAssociation } },
    },
    {
      pattern: 'sync/associations/',
      synopsis: 'Lists every associated secret.',
      operations: {
        list: {
          summary: 'List associated secrets with totals.',
          handler: async () => {
            const keyInfo: Record<string, { mount: string; secret_path: string; type: string; name: string }[]> = {};
            const all = await records.allAssociations();
            for (const { type, name, association } of all) {
              (keyInfo[`${association.mount}${association.secret_name}`] ??= []).push({ mount: association.mount, secret_path: association.secret_name, type, name });
            }
            const keys = Object.keys(keyInfo).sort();
            return { data: { keys, key_info: keyInfo, total_associations: all.length, total_secrets: keys.length } };
          },
        },
      },
    },
    {
      pattern: 'sync/associations/destinations',
      synopsis: 'Reads the destinations a secret is associated with (for names containing "/").',
      fields: ASSOCIATION_FIELDS,
      operations: {
        read: { summary: 'Read the destinations of a secret.', forwardQuery: true, handler: async (req, fields) => destinationsOfSecret(req, requiredQuery(fields, 'mount'), requiredQuery(fields, 'secret_name')) },
      },
    },
    {
      pattern: 'sync/associations/:mount/*name',
      synopsis: 'Reads the destinations a secret is associated with.',
      operations: {
        read: { summary: 'Read the destinations of a secret.', handler: async (req, fields) => destinationsOfSecret(req, fields.params.mount, fields.params.name) },
      },
    },
  ];
}

/** A query parameter a read cannot do without (the framework checks required fields on writes only). */
function requiredQuery(fields: FieldData, name: string): string {
  const value = fields.get<string | undefined>(name);
  if (value === undefined || value === '') throw ServiceError.badRequest(`missing required field "${name}"`);
  return value;
}

/** The provider name of a secret for a destination; throws SecretNameError when the template or the name is unusable. */
function secretNameFor(destination: Destination, secret: { namespace: string; mount: string; accessor: string; secretName: string }, key: string): string {
  try {
    return providerSecretName(destination.type, destination.options.secret_name_template, nameFields(destination, secret, key));
  } catch (err) {
    if (err instanceof SecretNameError) throw ServiceError.badRequest(err.message);
    throw err;
  }
}
