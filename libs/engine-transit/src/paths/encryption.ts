import type { FieldData, FieldMap, PathDeclaration, Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { BATCH_FIELDS, itemInt, itemString, requestItems, requireItemString, runItems, singleItem, type ItemResult, type ResultFieldsJson } from '../batch';
import { decrypt, encrypt } from '../encryption';
import { DEFAULT_KEY_TYPE, KEY_TYPE_NAMES } from '../key-types';
import { NAME_FIELD, createKey, type TransitServices } from '../services';
import type { TransitKey } from '../transit-key';
import { cipherOptions, highestVersion, requireItemBase64 } from './item-inputs';

const CIPHER_FIELDS: FieldMap = {
  name: NAME_FIELD,
  context: { type: 'string', sensitive: true, description: 'Base64 context for key derivation; required when the key is derived.' },
  nonce: {
    type: 'string',
    sensitive: true,
    description: 'Base64 nonce of exactly 12 bytes; only for convergent encryption keys, mixed into the derived nonce.',
  },
  associated_data: { type: 'string', sensitive: true, description: 'Base64 associated data, authenticated but not encrypted (AEAD key types).' },
  reference: { type: 'string', description: 'Echoed in the matching batch result item.' },
  ...BATCH_FIELDS,
};

const KEY_VERSION_FIELD: FieldMap = {
  key_version: { type: 'int', default: 0, description: 'Key version to encrypt with; 0 means the latest.' },
};

const ENCRYPT_FIELDS: FieldMap = {
  ...CIPHER_FIELDS,
  ...KEY_VERSION_FIELD,
  plaintext: { type: 'string', sensitive: true, description: 'Base64 plaintext to encrypt.' },
  type: {
    type: 'string',
    default: DEFAULT_KEY_TYPE,
    allowed: KEY_TYPE_NAMES,
    description: 'Type of the key when encrypt creates it (upsert).',
  },
  convergent_encryption: {
    type: 'string',
    default: '',
    allowed: ['', 'true', 'false', '1', '0', 't', 'f'],
    description: 'Upsert only: create the key with convergent encryption (requires a context).',
  },
};

const DECRYPT_FIELDS: FieldMap = {
  ...CIPHER_FIELDS,
  ciphertext: { type: 'string', description: 'Ciphertext to decrypt, `svc:v<version>:<base64>`.' },
};

const REWRAP_FIELDS: FieldMap = {
  ...DECRYPT_FIELDS,
  ...KEY_VERSION_FIELD,
};

const TRUE_WORDS = ['true', '1', 't'];
const ENCRYPT_ITEM = ['plaintext', 'context', 'nonce', 'associated_data', 'key_version'];
const DECRYPT_ITEM = ['ciphertext', 'context', 'nonce', 'associated_data'];
const REWRAP_ITEM = [...DECRYPT_ITEM, 'key_version'];

interface Ciphertext extends ItemResult {
  ciphertext: string;
  key_version: number;
}

// Ciphertexts (`svc:v<n>:` and base64) and base64 plaintexts never need escaping in JSON.
const ciphertextJson: ResultFieldsJson<Ciphertext> = (r) => `"ciphertext":"${r.ciphertext}","key_version":${r.key_version}`;
const plaintextJson: ResultFieldsJson<{ plaintext: string }> = (r) => `"plaintext":"${r.plaintext}"`;

export function encryptionPaths({ keys, settings, storage }: TransitServices): PathDeclaration[] {
  /**
   * Encrypt creates missing keys only with `create` capability, unless upsert is disabled. A cached
   * key answers at once (it exists either way).
   */
  const encryptTargetExists = (_req: Request, f: FieldData): boolean | Promise<boolean> => {
    if (keys.fresh(f.get('name'))) return true;
    return (async () => {
      if ((await settings.getKeysConfig(storage)).disable_upsert) return true;
      return (await keys.get(storage, f.get('name'))) !== null;
    })();
  };

  const encryptionKey = async (req: Request, f: FieldData): Promise<TransitKey> => {
    const existing = await keys.get(storage, f.get('name'));
    if (existing) return existing;
    if (req.operation !== 'create') throw ServiceError.badRequest(`encryption key not found: "${f.get<string>('name')}"`);
    const first = requestItems(f, singleItem(f, ENCRYPT_ITEM))[0];
    const context = typeof first === 'object' && first !== null ? itemString((first as Record<string, unknown>).context, 'context') : undefined;
    return createKey(keys, storage, f.get('name'), {
      type: f.get('type'),
      derived: Boolean(context),
      convergent_encryption: TRUE_WORDS.includes(f.get<string>('convergent_encryption')),
      exportable: false,
      allow_plaintext_backup: false,
      auto_rotate_period: 0,
      key_size: 0,
      imported: false,
      allow_rotation: false,
    });
  };

  /** The key, re-validated if the request's data names a version newer than the cached latest. */
  const decryptionKey = async (f: FieldData, itemFields: string[]) => {
    const single = singleItem(f, itemFields);
    const key = await keys.require(storage, f.get('name'), highestVersion(requestItems(f, single), 'ciphertext'));
    return { key, single };
  };

  const encryptItem = (key: TransitKey, item: Record<string, unknown>, plaintext: Buffer): Ciphertext => {
    const version = key.writeVersion(itemInt(item.key_version, 'key_version'));
    return { ciphertext: encrypt(key, version, plaintext, cipherOptions(item)), key_version: version };
  };
  const decryptItem = (key: TransitKey, item: Record<string, unknown>) =>
    decrypt(key, requireItemString(item.ciphertext, 'ciphertext'), cipherOptions(item));

  return [
    {
      pattern: 'encrypt/:name',
      synopsis: 'Encrypts base64 plaintext with a named key (creating the key with `create` capability).',
      fields: ENCRYPT_FIELDS,
      existenceCheck: encryptTargetExists,
      operations: {
        update: {
          summary: 'Encrypt data.',
          handler: async (req, f) => {
            const key = keys.fresh(f.get('name')) ?? (await encryptionKey(req, f));
            return runItems(
              f,
              singleItem(f, ENCRYPT_ITEM),
              (item) => encryptItem(key, item, requireItemBase64(item.plaintext, 'plaintext', 'missing plaintext to encrypt')),
              ciphertextJson,
            );
          },
        },
      },
    },
    {
      pattern: 'decrypt/:name',
      synopsis: 'Decrypts ciphertext with a named key; the plaintext is returned base64-encoded.',
      fields: DECRYPT_FIELDS,
      operations: {
        update: {
          summary: 'Decrypt data.',
          handler: async (_req, f) => {
            const { key, single } = await decryptionKey(f, DECRYPT_ITEM);
            return runItems(f, single, (item) => ({ plaintext: decryptItem(key, item).toString('base64') }), plaintextJson);
          },
        },
      },
    },
    {
      pattern: 'rewrap/:name',
      synopsis: 'Re-encrypts ciphertext with the latest (or given) key version without returning plaintext.',
      fields: REWRAP_FIELDS,
      operations: {
        update: {
          summary: 'Rewrap data.',
          handler: async (_req, f) => {
            const { key, single } = await decryptionKey(f, REWRAP_ITEM);
            return runItems(f, single, (item) => encryptItem(key, item, decryptItem(key, item)), ciphertextJson);
          },
        },
      },
    },
  ];
}
