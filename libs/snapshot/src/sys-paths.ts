import { createReadStream } from 'node:fs';
import { listResponse, type FieldMap, type PathDeclaration, type Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { Readable } from 'node:stream';
import { createView, type TransactionalStore } from '@svc/storage';
import type { SnapshotFile } from './archive';
import { CONFIG_PREFIX, NO_STATUS, STATUS_PREFIX, STORAGE_TYPES, checkConfig, publicConfig, type SnapshotConfig, type SnapshotStatus } from './config';

/** What the sys/storage/raft/snapshot* paths need of the core, which implements it. */
export interface SnapshotPathsDeps {
  /** Where the automated snapshots' configurations and status live (the barrier). */
  barrier: TransactionalStore;
  snapshots: {
    /** An archive of the whole storage as of now. */
    save(): Promise<SnapshotFile>;
    /** Replaces the storage with an archive's (`force`: one of another installation). */
    restore(body: Readable, force: boolean): Promise<void>;
  };
}

/** Required fields (interval, path_prefix, storage_type, the type's own) are checked on the stored configuration merged with the request, so an update may send only what changes. */
const CONFIG_FIELDS: FieldMap = {
  interval: { type: 'duration', description: 'Time between snapshots: integer seconds or a duration string; read back in seconds.' },
  retain: { type: 'int', description: 'Number of snapshots kept; older ones are deleted (default 1).' },
  path_prefix: { type: 'string', description: 'local: the directory; cloud types: the object name prefix (cloudb-blob and cloudc-bucket: ending in "/").' },
  file_prefix: { type: 'string', description: 'Start of every snapshot file name (default service-snapshot).' },
  storage_type: { type: 'string', allowed: STORAGE_TYPES, description: 'Where snapshots go: local, cloud-objstore, cloudb-blob or cloudc-bucket.' },
  local_max_space: { type: 'int', description: 'local (required): bytes all snapshots with this file_prefix in path_prefix may take.' },
  cloud_objstore_bucket: { type: 'string', description: 'cloud-objstore (required): the bucket.' },
  cloud_objstore_region: { type: 'string', description: 'cloud-objstore (required): the bucket\'s region.' },
  cloud_access_key_id: { type: 'string', description: 'cloud-objstore: access key id; without it the SDK\'s own credential chain is used.' },
  cloud_secret_access_key: { type: 'string', sensitive: true, description: 'cloud-objstore: secret access key (never read back).' },
  cloud_session_token: { type: 'string', sensitive: true, description: 'cloud-objstore: session token of temporary credentials (never read back).' },
  cloud_objstore_endpoint: { type: 'string', description: 'cloud-objstore: endpoint of a non-provider implementation.' },
  cloud_objstore_disable_tls: { type: 'bool', description: 'cloud-objstore: plain HTTP to the endpoint (testing only).' },
  cloud_objstore_force_path_style: { type: 'bool', description: 'cloud-objstore: bucket in the URL path instead of the host name.' },
  cloud_objstore_enable_kms: { type: 'bool', description: 'cloud-objstore: encrypt objects with KMS.' },
  cloud_objstore_server_side_encryption: { type: 'bool', description: 'cloud-objstore: server-side encryption (AES256); not with cloud_objstore_enable_kms.' },
  cloud_objstore_kms_key: { type: 'string', description: 'cloud-objstore: the KMS key, with cloud_objstore_enable_kms.' },
  cloudc_bucket: { type: 'string', description: 'cloudc-bucket (required): the bucket.' },
  cloudc_service_account_key: { type: 'string', sensitive: true, description: 'cloudc-bucket: service-account key (JSON text); without it the SDK\'s own credentials are used (never read back).' },
  cloudc_endpoint: { type: 'string', description: 'cloudc-bucket: endpoint of a non-provider implementation.' },
  cloudc_disable_tls: { type: 'bool', description: 'cloudc-bucket: plain HTTP to the endpoint (testing only).' },
  cloudb_container_name: { type: 'string', description: 'cloudb-blob (required): the container.' },
  cloudb_account_name: { type: 'string', description: 'cloudb-blob: the storage account.' },
  cloudb_account_key: { type: 'string', sensitive: true, description: 'cloudb-blob: the account key; without it the SDK\'s credential chain is used (never read back).' },
  cloudb_blob_environment: { type: 'string', description: 'cloudb-blob: AzurePublicCloud (default), AzureChinaCloud, AzureUSGovernmentCloud or AzureGermanCloud.' },
  cloudb_endpoint: { type: 'string', description: 'cloudb-blob: endpoint of a non-provider implementation.' },
};

const NO_BODY = 'the snapshot is the request body: send the archive saved from sys/storage/raft/snapshot';

/**
 * sys/storage/raft/snapshot (save and restore), snapshot-force, and the automated snapshots'
 * configurations and status (run by the snapshot service).
 */
export function snapshotPaths(core: SnapshotPathsDeps): PathDeclaration[] {
  const view = () => createView(core.barrier, '');
  const restore = (force: boolean) => async (req: Request) => {
    if (!req.body) throw ServiceError.badRequest(NO_BODY);
    await core.snapshots.restore(req.body, force);
    return undefined;
  };
  const existingConfig = async (name: string): Promise<SnapshotConfig> => {
    const config = await view().getJSON<SnapshotConfig>(CONFIG_PREFIX + name);
    if (!config) throw ServiceError.notFound(`no automated snapshot configuration named "${name}"`);
    return config;
  };

  return [
    {
      pattern: 'storage/raft/snapshot',
      synopsis: 'Saves a snapshot of the whole storage, or restores one.',
      description:
        'GET streams a gzip-compressed archive of every stored entry (ciphertext) as of one point in time. POST (the archive as the body, ' +
        'any size) restores it after checking its checksums; a snapshot of another installation is refused (see snapshot-force).',
      operations: {
        read: {
          summary: 'Save a snapshot.',
          sudo: true,
          rootNamespace: true,
          handler: async () => {
            const file = await core.snapshots.save();
            const stream = createReadStream(file.path);
            stream.once('close', () => void file.dispose());
            return {
              stream,
              headers: {
                'content-type': 'application/gzip',
                'content-length': String(file.size),
                'content-disposition': `attachment; filename="${file.meta.id}.snap"`,
              },
            };
          },
        },
        update: { summary: 'Restore a snapshot of this installation.', sudo: true, rootNamespace: true, handler: restore(false) },
      },
    },
    {
      pattern: 'storage/raft/snapshot-force',
      synopsis: 'Restores a snapshot even when it was taken by another installation.',
      description: 'After restoring another installation\'s snapshot the service seals itself: unseal it with that installation\'s unseal keys.',
      operations: { update: { summary: 'Restore any snapshot.', sudo: true, rootNamespace: true, handler: restore(true) } },
    },
    {
      pattern: 'storage/raft/snapshot-auto/config/',
      synopsis: 'Lists the automated snapshot configurations.',
      operations: {
        list: { summary: 'List configurations.', sudo: true, rootNamespace: true, handler: async () => listResponse(await view().list(CONFIG_PREFIX)) },
      },
    },
    {
      pattern: 'storage/raft/snapshot-auto/config/:name',
      synopsis: 'An automated snapshot configuration: how often, how many to keep, and where.',
      fields: CONFIG_FIELDS,
      existenceCheck: async (_req, f) => (await view().getJSON(CONFIG_PREFIX + f.params.name)) !== null,
      operations: {
        create: { summary: 'Create a configuration.', sudo: true, rootNamespace: true, handler: async (_req, f) => writeConfig(f.params.name, {}, f) },
        update: {
          summary: 'Create or update a configuration.',
          sudo: true,
          rootNamespace: true,
          handler: async (_req, f) => writeConfig(f.params.name, (await view().getJSON<SnapshotConfig>(CONFIG_PREFIX + f.params.name)) ?? {}, f),
        },
        read: { summary: 'Read a configuration (credentials are not shown).', sudo: true, rootNamespace: true, handler: async (_req, f) => ({ data: publicConfig(await existingConfig(f.params.name)) }) },
        delete: {
          summary: 'Delete a configuration.',
          sudo: true,
          rootNamespace: true,
          handler: async (_req, f) => {
            await view().delete(CONFIG_PREFIX + f.params.name);
            await view().delete(STATUS_PREFIX + f.params.name);
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'storage/raft/snapshot-auto/status/:name',
      synopsis: 'The status of an automated snapshot configuration: its latest snapshot and error.',
      operations: {
        read: {
          summary: 'Read the status.',
          rootNamespace: true,
          handler: async (_req, f) => {
            await existingConfig(f.params.name);
            // The snapshot service writes the status: read past this gateway's storage cache (a
            // transaction reads storage itself).
            const stored = await view().transaction((tx) => tx.get(STATUS_PREFIX + f.params.name));
            const status: SnapshotStatus = stored ? (JSON.parse(stored.toString('utf8')) as SnapshotStatus) : NO_STATUS;
            return { data: Object.fromEntries(Object.keys(NO_STATUS).map((field) => [field, status[field as keyof SnapshotStatus]])) };
          },
        },
      },
    },
  ];

  /** The stored configuration with the request's fields over it, checked whole, then stored. */
  async function writeConfig(name: string, stored: Partial<SnapshotConfig>, f: { has(name: string): boolean; get<T>(name: string): T }): Promise<undefined> {
    const merged: Record<string, unknown> = { ...stored };
    for (const field of Object.keys(CONFIG_FIELDS)) if (f.has(field)) merged[field] = f.get(field);
    await view().putJSON(CONFIG_PREFIX + name, checkConfig(merged as Partial<SnapshotConfig>));
    return undefined;
  }
}
