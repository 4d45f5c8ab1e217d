import type { PathDeclaration } from '@svc/framework';
import { KvRecords, updateConfig } from './records';
import { requestedSettings, SETTINGS_FIELDS } from './settings';
import { describeConfig } from './versions';

/** config: the mount-wide defaults for every key. */
export function configPaths(): PathDeclaration {
  return {
    pattern: 'config',
    synopsis: 'Configures the version settings that apply to every key of the mount.',
    fields: SETTINGS_FIELDS,
    operations: {
      read: {
        summary: "Read the mount's settings.",
        handler: async (req) => ({ data: describeConfig(await new KvRecords(req.storage).config()) }),
      },
      update: {
        summary: "Change the mount's settings; fields not given keep their values.",
        handler: async (req, fields) => {
          await updateConfig(req.storage, requestedSettings(fields));
          return undefined;
        },
      },
    },
  };
}
