import type { FieldData, FieldMap } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { EngineConfig } from './records';

/** The settings a key's metadata and the mount's config share. */
export type VersionSettings = EngineConfig;

export const SETTINGS_FIELDS: FieldMap = {
  max_versions: {
    type: 'int',
    description:
      'Versions kept per key; older ones are removed for good. 0 falls back (key: to the mount; mount: to 10).',
  },
  cas_required: { type: 'bool', description: 'Every write must carry `options.cas`.' },
  delete_version_after: {
    type: 'duration',
    description: 'Versions read as deleted this long after they are written; 0 disables.',
  },
};

/** The settings the request sets; the rest stay as they are. */
export function requestedSettings(fields: FieldData): Partial<VersionSettings> {
  const settings: Partial<VersionSettings> = {};
  if (fields.has('max_versions')) {
    const maxVersions = fields.get<number>('max_versions');
    if (maxVersions < 0) throw ServiceError.badRequest('field "max_versions" must be a non-negative integer');
    settings.max_versions = maxVersions;
  }
  if (fields.has('cas_required')) settings.cas_required = fields.get<boolean>('cas_required');
  if (fields.has('delete_version_after')) settings.delete_version_after = fields.get<number>('delete_version_after');
  return settings;
}
