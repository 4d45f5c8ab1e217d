import type { PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { KEY_NAME_PATTERN, NAME_FIELD, type TransitServices } from '../services';
import { decodeBase64 } from '../encoding';
import type { StoredKey } from '../stored-key';
import { TransitKey } from '../transit-key';

/** The backup blob: base64 of this JSON. */
interface KeyBackup {
  policy: StoredKey;
}

function parseBackup(text: string): StoredKey {
  try {
    const { policy } = JSON.parse(decodeBase64(text, 'backup').toString('utf8')) as KeyBackup;
    // Decoding the latest version proves the backup is complete and of a known type.
    new TransitKey(policy).material(policy.latest_version);
    return policy;
  } catch {
    throw ServiceError.badRequest('backup is not a valid key backup');
  }
}

export function backupPaths({ keys, storage }: TransitServices): PathDeclaration[] {
  return [
    {
      pattern: 'backup/:name',
      synopsis: 'Returns a plaintext backup of a key with all its versions and settings.',
      fields: { name: NAME_FIELD },
      operations: {
        read: {
          summary: 'Back up a key.',
          handler: async (_req, f) => {
            const key = await keys.require(storage, f.get('name'));
            if (!key.stored.allow_plaintext_backup || !key.stored.exportable) {
              throw ServiceError.badRequest('backup requires the key to have both allow_plaintext_backup and exportable set');
            }
            const backup: KeyBackup = { policy: key.stored };
            return { data: { backup: Buffer.from(JSON.stringify(backup), 'utf8').toString('base64') } };
          },
        },
      },
    },
    {
      pattern: 'restore/:name?',
      synopsis: 'Restores a key from a backup, under its own name or the one in the URL.',
      fields: {
        name: NAME_FIELD,
        backup: { type: 'string', required: true, sensitive: true, description: 'Backup returned by backup/:name.' },
        force: { type: 'bool', default: false, description: 'Overwrite an existing key of the same name.' },
      },
      operations: {
        update: {
          summary: 'Restore a key.',
          handler: async (_req, f) => {
            const policy = parseBackup(f.get('backup'));
            const name = f.has('name') ? f.get<string>('name') : policy.name;
            if (!KEY_NAME_PATTERN.test(name)) throw ServiceError.badRequest('the backup holds an invalid key name');
            if (!f.get<boolean>('force') && (await keys.get(storage, name))) {
              throw ServiceError.badRequest(`key "${name}" already exists; set force to overwrite it`);
            }
            await keys.replace(storage, { ...policy, name });
            return undefined;
          },
        },
      },
    },
  ];
}
