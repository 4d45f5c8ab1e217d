import type { PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { EXPORT_TYPES, exportNeedsExportable, exportVersion, transferMaterial, type ExportType } from '../key-export';
import { NAME_FIELD, type TransitServices } from '../services';
import type { TransitKey } from '../transit-key';
import { wrapKeyMaterial } from '../wrapping';

const VERSION_FIELD = {
  type: 'string',
  description: 'Version to export (in the URL): a number or `latest`; all versions when omitted.',
} as const;

/** The versions an export returns: one named version, or every version still decryptable. */
function exportedVersions(key: TransitKey, requested: string | undefined): number[] {
  if (requested === undefined) return key.versionNumbers().filter((version) => version >= key.stored.min_decryption_version);
  const version = key.versionFromText(requested);
  if (version < key.stored.min_decryption_version) {
    throw ServiceError.badRequest('version is below min_decryption_version and can no longer be exported');
  }
  return [version];
}

function requireExportable(key: TransitKey): void {
  if (!key.stored.exportable) throw ServiceError.badRequest(`key "${key.name}" is not exportable`);
}

export function exportPaths({ keys, storage }: TransitServices): PathDeclaration[] {
  return [
    {
      pattern: 'export/:key_type/:name/:version?',
      synopsis: 'Exports key material of an exportable key, or public keys and certificate chains of any asymmetric key.',
      fields: {
        key_type: { type: 'string', allowed: EXPORT_TYPES, description: 'What to export (in the URL).' },
        name: NAME_FIELD,
        version: VERSION_FIELD,
      },
      operations: {
        read: {
          summary: 'Export a key.',
          handler: async (_req, f) => {
            const key = await keys.require(storage, f.get('name'));
            const type = f.get<ExportType>('key_type');
            if (exportNeedsExportable(type)) requireExportable(key);
            const exported: Record<string, string> = {};
            for (const version of exportedVersions(key, f.params.version)) {
              exported[String(version)] = exportVersion(key, key.material(version), type);
            }
            return { data: { name: key.name, type: key.spec.name, keys: exported } };
          },
        },
      },
    },
    {
      pattern: 'byok-export/:destination/:source/:version?',
      synopsis: 'Exports a key wrapped for another cluster: the destination RSA key (usually its wrapping key) wraps the source key.',
      fields: {
        destination: NAME_FIELD,
        source: NAME_FIELD,
        version: VERSION_FIELD,
        hash: { type: 'string', default: 'SHA256', description: 'Hash of the RSA-OAEP step: SHA1, SHA224, SHA256, SHA384 or SHA512.' },
      },
      operations: {
        read: {
          summary: 'Export a key for import elsewhere.',
          handler: async (_req, f) => {
            const destination = await keys.require(storage, f.get('destination'));
            const wrapping = destination.material(destination.latestVersion).publicKey;
            if (destination.spec.family !== 'rsa' || !wrapping) {
              throw ServiceError.badRequest('the destination must be an RSA key (for example an imported wrapping key)');
            }
            const source = await keys.require(storage, f.get('source'));
            requireExportable(source);
            const wrapped: Record<string, string> = {};
            for (const version of exportedVersions(source, f.params.version)) {
              wrapped[String(version)] = wrapKeyMaterial(wrapping, transferMaterial(source, source.material(version)), f.get('hash'));
            }
            return { data: { name: source.name, type: source.spec.name, keys: wrapped } };
          },
        },
      },
    },
  ];
}
