import type { StorageView } from '@svc/storage';
import type { PathDeclaration } from '@svc/framework';
import type { Clock } from '../clock';
import { mergePatch, type JsonObject } from '../json';
import { PATH_FIELD, secretKey, secretNotFound } from '../secret-path';
import { changeVersions, SOFT_DELETE, versionResponse, writeVersion } from './key-operations';
import { sharedReads } from './records';
import { casOption, requestedVersion, requiredMap, requireMergePatch, VERSION_FIELD } from './request';

/** data/:path: read a version, write a new one, patch the latest, soft-delete the latest. */
export function dataPaths(storage: StorageView, clock: Clock): PathDeclaration {
  return {
    pattern: 'data/*path?',
    synopsis: 'Reads and writes the versions of a secret.',
    description:
      'A write stores `data` as a new version (check-and-set with `options.cas`); a read returns a version ' +
      'with its metadata; PATCH merges a JSON merge patch into the latest version; DELETE soft-deletes the latest version.',
    fields: {
      ...PATH_FIELD,
      ...VERSION_FIELD,
      data: { type: 'map', required: true, sensitive: true, description: 'The secret: a map of key/value pairs.' },
      options: { type: 'map', description: 'Write options: `cas` (int), the version this write expects to replace.' },
    },
    existenceCheck: async (_req, fields) => (await sharedReads.metadata(storage, secretKey(fields.params.path))) !== null,
    createAndUpdateAlike: true,
    operations: {
      read: {
        summary: 'Read a version of the secret.',
        forwardQuery: true,
        handler: (_req, fields) => versionResponse(storage, secretKey(fields.params.path), requestedVersion(fields), clock(), 'data'),
      },
      create: {
        summary: 'Write a new version of the secret.',
        handler: async (_req, fields) => {
          const data = requiredMap(fields, 'data');
          const path = secretKey(fields.params.path);
          return writeVersion(storage, path, clock(), casOption(fields), async () => data);
        },
      },
      patch: {
        summary: 'Merge a JSON merge patch into the latest version, writing a new version.',
        handler: async (req, fields) => {
          requireMergePatch(req);
          const patch = requiredMap(fields, 'data');
          const path = secretKey(fields.params.path);
          const now = clock();
          return writeVersion(storage, path, now, casOption(fields), async (records) => {
            const current = await records.current(path, now);
            if (current === null) throw secretNotFound();
            return mergePatch(current, patch) as JsonObject;
          });
        },
      },
      delete: {
        summary: 'Soft-delete the latest version of the secret.',
        handler: async (_req, fields) => {
          const select = (metadata: { current_version: number }) => [metadata.current_version];
          await changeVersions(storage, secretKey(fields.params.path), clock(), select, SOFT_DELETE);
          return undefined;
        },
      },
    },
  };
}
