import type { FieldData, FieldMap, PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { describeKey } from '../describe-key';
import { decodeOptionalBase64 } from '../encoding';
import { importedVersion, publicKeyVersion, type StoredVersion } from '../key-material';
import { keyTypeSpec, type KeyTypeSpec } from '../key-types';
import { NAME_FIELD, type TransitServices } from '../services';
import { checkKeyOptions, newStoredKey, type StoredKey } from '../stored-key';
import { unwrapKeyMaterial } from '../wrapping';

const MATERIAL_FIELDS: FieldMap = {
  name: NAME_FIELD,
  ciphertext: {
    type: 'string',
    sensitive: true,
    description:
      'Base64: the ephemeral AES-256 key wrapped with the wrapping key (RSA-OAEP, first 512 bytes), then the key material under AES key wrap with padding. Required unless public_key is set.',
  },
  hash_function: {
    type: 'string',
    default: 'SHA256',
    description: 'Hash of the RSA-OAEP step: SHA1, SHA224, SHA256, SHA384 or SHA512.',
  },
  public_key: { type: 'string', default: '', description: 'PEM public key, to import only the public half.' },
};

const IMPORT_FIELDS: FieldMap = {
  ...MATERIAL_FIELDS,
  type: { type: 'string', required: true, description: 'Key type of the imported material.' },
  allow_rotation: { type: 'bool', default: false, description: 'Allows rotation inside the service (then no more imports).' },
  derived: { type: 'bool', default: false, description: 'Enables key derivation.' },
  context: { type: 'string', default: '', description: 'Base64 context; required when derived is true.' },
  exportable: { type: 'bool', default: false, description: 'Allows export; irreversible.' },
  allow_plaintext_backup: { type: 'bool', default: false, description: 'Allows plaintext backup; irreversible.' },
  auto_rotate_period: { type: 'duration', default: 0, description: 'Automatic rotation period; 0 or at least one hour.' },
};

const IMPORT_VERSION_FIELDS: FieldMap = {
  ...MATERIAL_FIELDS,
  version: {
    type: 'int',
    description: 'Version to complete with a private key; when empty a new version is created, unless a private key is given and the latest version lacks one.',
  },
};

export function importPaths({ keys, wrappingKey, storage }: TransitServices): PathDeclaration[] {
  /** The version carried by the request: a public key, or wrapped key material. */
  const importedMaterial = async (f: FieldData, spec: KeyTypeSpec): Promise<StoredVersion> => {
    const publicKey = f.get<string>('public_key');
    const ciphertext = f.get<string | undefined>('ciphertext');
    if (publicKey && ciphertext) throw ServiceError.badRequest('give either ciphertext or public_key, not both');
    if (publicKey) return publicKeyVersion(spec, publicKey);
    if (!ciphertext) throw ServiceError.badRequest('missing ciphertext (or public_key) to import');
    const material = unwrapKeyMaterial(await wrappingKey.privateKey(storage), ciphertext, f.get('hash_function'));
    return importedVersion(spec, material);
  };

  return [
    {
      pattern: 'wrapping_key',
      synopsis: 'Returns the 4096-bit RSA public key that wraps key material for import.',
      operations: {
        read: {
          summary: 'Read the wrapping key.',
          handler: async () => ({ data: { public_key: await wrappingKey.publicKeyPem(storage) } }),
        },
      },
    },
    {
      pattern: 'keys/:name/import',
      synopsis: 'Imports key material (or a public key) into a new key.',
      fields: IMPORT_FIELDS,
      operations: {
        update: {
          summary: 'Import a key.',
          handler: async (_req, f) => {
            const name = f.get<string>('name');
            if (await keys.get(storage, name)) {
              throw ServiceError.badRequest(`key "${name}" already exists; use import_version to add versions`);
            }
            const options = {
              type: f.get<string>('type'),
              derived: f.get<boolean>('derived'),
              convergent_encryption: false,
              exportable: f.get<boolean>('exportable'),
              allow_plaintext_backup: f.get<boolean>('allow_plaintext_backup'),
              auto_rotate_period: f.get<number>('auto_rotate_period'),
              key_size: 0,
              imported: true,
              allow_rotation: f.get<boolean>('allow_rotation'),
            };
            const spec = checkKeyOptions(options);
            if (options.derived && !decodeOptionalBase64(f.get('context'), 'context')) {
              throw ServiceError.badRequest('context is required when derived is true');
            }
            const first = await importedMaterial(f, spec);
            const { key, created } = await keys.create(storage, newStoredKey(name, options, first));
            if (!created) throw ServiceError.badRequest(`key "${name}" already exists; use import_version to add versions`);
            return { data: describeKey(key) };
          },
        },
      },
    },
    {
      pattern: 'keys/:name/import_version',
      synopsis: 'Imports key material into an existing imported key, as a new version or completing a public-key-only version.',
      fields: IMPORT_VERSION_FIELDS,
      operations: {
        update: {
          summary: 'Import a key version.',
          handler: async (_req, f) => {
            const current = await keys.require(storage, f.get('name'));
            checkAcceptsImports(current.stored);
            const material = await importedMaterial(f, keyTypeSpec(current.stored.type));
            const requested = f.has('version') ? f.get<number>('version') : undefined;
            const key = await keys.update(storage, current.name, (stored) => {
              checkAcceptsImports(stored);
              return withImportedVersion(stored, material, requested);
            });
            return { data: describeKey(key) };
          },
        },
      },
    },
  ];
}

function checkAcceptsImports(stored: StoredKey): void {
  if (!stored.imported) throw ServiceError.badRequest('keys generated by the service do not accept imported key material');
  if (stored.rotated_in_service) {
    throw ServiceError.badRequest('the key was rotated inside the service and accepts no more imported versions');
  }
}

/** Adds the imported material as a new version, or completes a public-key-only version with its private key. */
function withImportedVersion(stored: StoredKey, material: StoredVersion, requested: number | undefined): StoredKey {
  const latest = stored.versions[String(stored.latest_version)];
  const completesLatest = requested === undefined && material.private_key && latest && !latest.private_key && latest.public_key;
  const target = requested ?? (completesLatest ? stored.latest_version : undefined);
  if (target === undefined) {
    const version = stored.latest_version + 1;
    return { ...stored, latest_version: version, versions: { ...stored.versions, [String(version)]: material } };
  }
  const existing = stored.versions[String(target)];
  if (!existing) throw ServiceError.badRequest(`version ${target} does not exist`);
  if (existing.private_key || existing.key || !material.private_key) {
    throw ServiceError.badRequest(`version ${target} already holds key material; only a missing private key can be added`);
  }
  if (material.public_key !== existing.public_key) {
    throw ServiceError.badRequest(`the imported private key does not match the public key of version ${target}`);
  }
  return { ...stored, versions: { ...stored.versions, [String(target)]: { ...existing, private_key: material.private_key } } };
}
