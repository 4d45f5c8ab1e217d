import type { StorageView } from '@svc/storage';
import type { PathDeclaration } from '@svc/framework';
import { KvRecords, updateConfig } from './records';
import { requestedSettings, SETTINGS_FIELDS } from './settings';
import { describeConfig } from './versions';

/** config: the mount-wide defaults for every key. */
export function configPaths(storage: StorageView): PathDeclaration {
  return {
    pattern: 'config',
    synopsis: 'Configures the version settings that apply to every key of the mount.',
    fields: SETTINGS_FIELDS,
    operations: {
      read: {
        summary: "Read the mount's settings.",
        handler: async () => ({ data: describeConfig(await new KvRecords(storage).config()) }),
      },
      update: {
        summary: "Change the mount's settings; fields not given keep their values.",
        handler: async (_req, fields) => {
          await updateConfig(storage, requestedSettings(fields));
          return undefined;
        },
      },
    },
  };
}
