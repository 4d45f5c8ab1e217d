import { listPath, type FieldData, type FieldMap, type PathDeclaration, type Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { describeKey } from '../describe-key';
import { DEFAULT_KEY_TYPE, KEY_TYPE_NAMES } from '../key-types';
import { NAME_FIELD, createKey, rotateKey, type TransitServices } from '../services';
import { withConfig, withTrim, type KeyConfigChanges } from '../stored-key';

const MANAGED_KEY_FIELDS: FieldMap = {
  managed_key_name: { type: 'string', default: '', description: 'Managed key name (enterprise only; refused here).' },
  managed_key_id: { type: 'string', default: '', description: 'Managed key UUID (enterprise only; refused here).' },
};

const CREATE_FIELDS: FieldMap = {
  name: NAME_FIELD,
  type: { type: 'string', default: DEFAULT_KEY_TYPE, allowed: KEY_TYPE_NAMES, description: 'Type of key to create.' },
  derived: { type: 'bool', default: false, description: 'Enables key derivation; requests must then carry `context`.' },
  convergent_encryption: {
    type: 'bool',
    default: false,
    description: 'Same plaintext and context give the same ciphertext; requires `derived`.',
  },
  exportable: { type: 'bool', default: false, description: 'Allows export of the key material; cannot be disabled later.' },
  allow_plaintext_backup: {
    type: 'bool',
    default: false,
    description: 'Allows plaintext backups of the key; cannot be disabled later.',
  },
  key_size: { type: 'int', default: 0, description: 'HMAC keys only: key size in bytes, 32 to 512 (default 32).' },
  auto_rotate_period: {
    type: 'duration',
    default: 0,
    description: 'Period of automatic rotation; 0 disables, otherwise at least one hour.',
  },
  ...MANAGED_KEY_FIELDS,
};

const CONFIG_FIELDS: FieldMap = {
  name: NAME_FIELD,
  min_decryption_version: {
    type: 'int',
    description: 'Oldest version that may decrypt, verify signatures or verify HMACs.',
  },
  min_encryption_version: {
    type: 'int',
    description: 'Oldest version that may encrypt, sign or HMAC; 0 means the latest. Must be 0 or >= min_decryption_version.',
  },
  deletion_allowed: { type: 'bool', description: 'Allows the key to be deleted.' },
  exportable: { type: 'bool', description: 'Allows export; once set cannot be disabled.' },
  allow_plaintext_backup: { type: 'bool', description: 'Allows plaintext backup; once set cannot be disabled.' },
  auto_rotate_period: {
    type: 'duration',
    description: 'Period of automatic rotation; 0 disables, otherwise at least one hour. Unchanged when omitted.',
  },
};

const CONFIG_CHANGE_NAMES = [
  'min_decryption_version',
  'min_encryption_version',
  'deletion_allowed',
  'exportable',
  'allow_plaintext_backup',
  'auto_rotate_period',
] as const;

export function keyPaths({ keys, storage }: TransitServices): PathDeclaration[] {
  const keyExists = async (_req: Request, f: FieldData) => (await keys.get(storage, f.get('name'))) !== null;
  /** Reading a missing key is a 404, as for any missing resource; operations on one are a 400. */
  const describe = async (_req: Request, f: FieldData) => {
    const key = await keys.get(storage, f.get('name'));
    if (!key) throw ServiceError.notFound(`encryption key not found: "${f.get<string>('name')}"`);
    return { data: describeKey(key) };
  };

  return [
    listPath({ pattern: 'keys/', synopsis: 'Lists the named keys.', summary: 'List key names.', names: () => keys.list(storage) }),
    {
      pattern: 'keys/:name',
      synopsis: 'Creates, reads or deletes a named key.',
      description: 'Values set at creation cannot be changed afterwards; creating an existing key returns it unchanged.',
      fields: CREATE_FIELDS,
      existenceCheck: keyExists,
      operations: {
        update: {
          summary: 'Create a key.',
          handler: async (_req, f) => {
            const existing = await keys.get(storage, f.get('name'));
            if (existing) return { data: describeKey(existing) };
            const key = await createKey(keys, storage, f.get('name'), {
              type: f.get('type'),
              derived: f.get('derived'),
              convergent_encryption: f.get('convergent_encryption'),
              exportable: f.get('exportable'),
              allow_plaintext_backup: f.get('allow_plaintext_backup'),
              auto_rotate_period: f.get('auto_rotate_period'),
              key_size: f.get('key_size'),
              imported: false,
              allow_rotation: false,
            });
            return { data: describeKey(key) };
          },
        },
        read: { summary: 'Read a key: its settings, versions and public keys.', handler: describe },
        delete: {
          summary: 'Delete a key; requires deletion_allowed.',
          handler: async (_req, f) => {
            const key = await keys.require(storage, f.get('name'));
            if (!key.stored.deletion_allowed) {
              throw ServiceError.badRequest('deletion is not allowed for this key (set deletion_allowed in its config first)');
            }
            await keys.delete(storage, key.name);
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'keys/:name/config',
      synopsis: 'Tunes a key: version windows, deletion, export, backup and automatic rotation.',
      fields: CONFIG_FIELDS,
      operations: {
        update: {
          summary: 'Update the configuration of a key.',
          handler: async (_req, f) => {
            const changes: KeyConfigChanges = {};
            for (const name of CONFIG_CHANGE_NAMES) if (f.has(name)) Object.assign(changes, { [name]: f.get(name) });
            const key = await keys.update(storage, f.get('name'), (stored) => withConfig(stored, changes));
            return { data: describeKey(key) };
          },
        },
      },
    },
    {
      pattern: 'keys/:name/rotate',
      synopsis: 'Rotates a key: a new latest version of the same type and size.',
      fields: { name: NAME_FIELD, ...MANAGED_KEY_FIELDS },
      operations: {
        update: {
          summary: 'Rotate a key.',
          handler: async (_req, f) => ({ data: describeKey(await rotateKey(keys, storage, f.get('name'))) }),
        },
      },
    },
    {
      pattern: 'keys/:name/trim',
      synopsis: 'Permanently deletes key versions below a minimum available version.',
      fields: {
        name: NAME_FIELD,
        min_available_version: {
          type: 'int',
          required: true,
          description: 'Versions below this are deleted; at most min_decryption_version and min_encryption_version.',
        },
      },
      operations: {
        update: {
          summary: 'Trim old key versions.',
          handler: async (_req, f) => {
            const minimum = f.get<number>('min_available_version');
            const key = await keys.update(storage, f.get('name'), (stored) => withTrim(stored, minimum));
            return { data: describeKey(key) };
          },
        },
      },
    },
  ];
}
