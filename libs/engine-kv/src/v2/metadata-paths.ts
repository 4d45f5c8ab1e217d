import type { StorageView } from '@svc/storage';
import { listResponse, type FieldData, type PathDeclaration, type Response } from '@svc/framework';
import type { Clock } from '../clock';
import type { JsonObject } from '../json';
import { PATH_FIELD, secretDirectory, secretKey, secretNotFound } from '../secret-path';
import { patchedCustomMetadata, replacedCustomMetadata } from './custom-metadata';
import { KvRecords, updateKey, type KeyMetadata } from './records';
import { requireMergePatch } from './request';
import { requestedSettings, SETTINGS_FIELDS } from './settings';
import { describeMetadata, emptyMetadata, pruneVersions } from './versions';

async function listKeys(storage: StorageView, path: string | undefined): Promise<Response> {
  return listResponse(await new KvRecords(storage).list(secretDirectory(path)));
}

/**
 * Changes a key's metadata under its lock. `change` returns the new custom metadata (undefined:
 * unchanged); settings come from the request. Versions beyond a lowered `max_versions` go at once.
 */
async function updateMetadata(
  storage: StorageView,
  fields: FieldData,
  now: Date,
  existing: 'create-missing' | 'require',
  customMetadata: (current: KeyMetadata) => Record<string, string> | undefined,
): Promise<undefined> {
  const path = secretKey(fields.params.path);
  const settings = requestedSettings(fields);
  await updateKey(storage, path, async (records) => {
    const stored = await records.metadata(path);
    if (!stored && existing === 'require') throw secretNotFound();
    const metadata = { ...(stored ?? emptyMetadata(now)), ...settings, updated_time: now.toISOString() };
    const custom = customMetadata(metadata);
    if (custom !== undefined) metadata.custom_metadata = custom;
    for (const version of pruneVersions(metadata, await records.config())) await records.deleteVersion(path, version);
    await records.putMetadata(path, metadata);
  });
  return undefined;
}

/** metadata/ and metadata/:path: list keys; read, write, patch and delete a key's metadata. */
export function metadataPaths(storage: StorageView, clock: Clock): PathDeclaration[] {
  return [
    {
      pattern: 'metadata/',
      synopsis: 'Lists the keys at the root of the mount.',
      operations: { list: { summary: 'List the keys at the root.', handler: async () => listKeys(storage, undefined) } },
    },
    {
      pattern: 'metadata/*path?',
      synopsis: 'Reads and configures the metadata and settings of a secret, and lists directories.',
      fields: {
        ...PATH_FIELD,
        ...SETTINGS_FIELDS,
        custom_metadata: { type: 'map', description: 'Map of string keys to string values kept with the secret.' },
      },
      existenceCheck: async (_req, fields) =>
        (await new KvRecords(storage).metadata(secretKey(fields.params.path))) !== null,
      operations: {
        read: {
          summary: "Read the secret's metadata and the state of every version.",
          handler: async (_req, fields) => {
            const metadata = await new KvRecords(storage).metadata(secretKey(fields.params.path));
            if (!metadata) throw secretNotFound();
            return { data: describeMetadata(metadata) };
          },
        },
        list: {
          summary: 'List the keys in a directory.',
          handler: async (_req, fields) => listKeys(storage, fields.params.path),
        },
        create: {
          summary: "Create or update the secret's settings and custom metadata.",
          handler: async (_req, fields) =>
            updateMetadata(storage, fields, clock(), 'create-missing', () =>
              fields.has('custom_metadata')
                ? replacedCustomMetadata(fields.get<JsonObject>('custom_metadata'))
                : undefined,
            ),
        },
        patch: {
          summary: "Patch the secret's settings; custom metadata is merged as a JSON merge patch.",
          handler: async (req, fields) => {
            requireMergePatch(req);
            return updateMetadata(storage, fields, clock(), 'require', (current) =>
              fields.has('custom_metadata')
                ? patchedCustomMetadata(current.custom_metadata, fields.get<JsonObject>('custom_metadata'))
                : undefined,
            );
          },
        },
        delete: {
          summary: 'Delete the secret: its metadata and every version.',
          handler: async (_req, fields) => {
            const path = secretKey(fields.params.path);
            await updateKey(storage, path, async (records) => {
              const metadata = await records.metadata(path);
              if (metadata) await records.deleteKey(path, metadata);
            });
            return undefined;
          },
        },
      },
    },
  ];
}
