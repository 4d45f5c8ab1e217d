import type { StorageView } from '@svc/storage';
import type { PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { Clock } from '../clock';
import { isJsonObject, type JsonObject } from '../json';
import { PATH_FIELD, secretKey } from '../secret-path';
import { versionResponse } from './key-operations';
import { requestedVersion, VERSION_FIELD } from './request';

/**
 * The key structure of a secret with every leaf value replaced by null. Nesting deeper than `depth`
 * (0: no limit) is cut off: keys at that depth are leaves.
 */
export function subkeys(data: JsonObject, depth: number, level = 1): JsonObject {
  return Object.fromEntries(
    Object.entries(data).map(([name, value]) => {
      const descend = isJsonObject(value) && Object.keys(value).length > 0 && (depth === 0 || level < depth);
      return [name, descend ? subkeys(value, depth, level + 1) : null];
    }),
  );
}

/** subkeys/:path: the structure of a version without its values. */
export function subkeysPaths(storage: StorageView, clock: Clock): PathDeclaration {
  return {
    pattern: 'subkeys/*path?',
    synopsis: 'Reads the key structure of a secret version, without its values.',
    fields: {
      ...PATH_FIELD,
      ...VERSION_FIELD,
      depth: { type: 'int', default: 0, description: 'Deepest nesting level to return; 0 means no limit.' },
    },
    operations: {
      read: {
        summary: 'Read the subkeys of a version.',
        forwardQuery: true,
        handler: async (_req, fields) => {
          const depth = fields.get<number>('depth');
          if (depth < 0) throw ServiceError.badRequest('field "depth" must be a non-negative integer');
          const path = secretKey(fields.params.path);
          return versionResponse(storage, path, requestedVersion(fields), clock(), 'subkeys', (data) =>
            subkeys(data, depth),
          );
        },
      },
    },
  };
}
