import type { StorageView } from '@svc/storage';
import { listResponse, type PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { PATH_FIELD, secretDirectory, secretKey, secretNotFound } from '../secret-path';
import { plainStore } from './plain-store';

/** Version 1: the request body is the secret, stored as it is, one record per path. */
export function passthroughPaths(storage: StorageView): PathDeclaration {
  return {
    pattern: '*path?',
    synopsis: 'Reads, writes, deletes and lists secrets (unversioned).',
    description:
      'A write stores the whole JSON body as the secret, replacing what was there. LIST works on directories.',
    fields: PATH_FIELD,
    acceptsAnyFields: true,
    existenceCheck: async (_req, fields) => (await plainStore(storage).get(secretKey(fields.params.path))) !== null,
    operations: {
      read: {
        summary: 'Read the secret.',
        handler: async (_req, fields) => {
          const secret = await plainStore(storage).getJSON<Record<string, unknown>>(secretKey(fields.params.path));
          if (secret === null) throw secretNotFound();
          return { data: secret };
        },
      },
      list: {
        summary: 'List the secrets and directories in a directory.',
        handler: async (_req, fields) =>
          listResponse(await plainStore(storage).list(secretDirectory(fields.params.path))),
      },
      create: {
        summary: 'Store the request body as the secret.',
        handler: async (_req, fields) => {
          const path = secretKey(fields.params.path);
          if (Object.keys(fields.raw).length === 0) {
            throw ServiceError.badRequest('missing data fields: the body must be a JSON object with at least one key');
          }
          await plainStore(storage).putJSON(path, fields.raw);
          return undefined;
        },
      },
      delete: {
        summary: 'Delete the secret.',
        handler: async (_req, fields) => {
          await plainStore(storage).delete(secretKey(fields.params.path));
          return undefined;
        },
      },
    },
  };
}
