import type { StorageView } from '@svc/storage';
import type { PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { Clock } from '../clock';
import { PATH_FIELD, secretKey } from '../secret-path';
import { changeVersions, DESTROY, SOFT_DELETE, UNDELETE, type VersionChange } from './key-operations';

function versionsPath(storage: StorageView, clock: Clock, verb: string, change: VersionChange, synopsis: string): PathDeclaration {
  return {
    pattern: `${verb}/*path?`,
    synopsis,
    fields: {
      ...PATH_FIELD,
      versions: { type: 'comma-int-list', required: true, description: 'The version numbers to act on.' },
    },
    operations: {
      update: {
        summary: synopsis,
        handler: async (_req, fields) => {
          const versions = fields.get<number[]>('versions');
          if (versions.length === 0) throw ServiceError.badRequest('field "versions" must name at least one version');
          if (versions.some((version) => version < 1)) {
            throw ServiceError.badRequest('field "versions" must hold positive version numbers');
          }
          await changeVersions(storage, secretKey(fields.params.path), clock(), () => versions, change);
          return undefined;
        },
      },
    },
  };
}

/** delete/:path, undelete/:path and destroy/:path: act on chosen versions of a secret. */
export function versionPaths(storage: StorageView, clock: Clock): PathDeclaration[] {
  return [
    versionsPath(storage, clock, 'delete', SOFT_DELETE, 'Soft-delete versions of a secret; undelete restores them.'),
    versionsPath(storage, clock, 'undelete', UNDELETE, 'Restore soft-deleted versions of a secret.'),
    versionsPath(storage, clock, 'destroy', DESTROY, 'Permanently remove the data of versions of a secret.'),
  ];
}
