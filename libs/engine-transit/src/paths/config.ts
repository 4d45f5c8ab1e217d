import type { PathDeclaration } from '@svc/framework';
import { MIN_CACHE_SIZE } from '../key-store';
import type { TransitServices } from '../services';

export function configPaths({ keys, settings }: TransitServices): PathDeclaration[] {
  return [
    {
      pattern: 'config/keys',
      synopsis: 'Mount-wide key settings.',
      fields: {
        disable_upsert: {
          type: 'bool',
          default: false,
          description: 'Disables creation of missing keys by encrypt; `create` then behaves as `update`.',
        },
      },
      operations: {
        read: { summary: 'Read the key settings.', handler: async (req) => ({ data: { ...(await settings.getKeysConfig(req.storage)) } }) },
        update: {
          summary: 'Update the key settings.',
          handler: async (req, f) => {
            const config = { disable_upsert: f.get<boolean>('disable_upsert') };
            await settings.setKeysConfig(req.storage, config);
            return { data: { ...config } };
          },
        },
      },
    },
    {
      pattern: 'cache-config',
      synopsis: 'Size of the in-memory key cache.',
      fields: {
        size: {
          type: 'int',
          default: 0,
          description: `Number of keys cached; 0 means unlimited, otherwise at least ${MIN_CACHE_SIZE} (least recently used are dropped).`,
        },
      },
      operations: {
        read: { summary: 'Read the cache size.', handler: async (req) => ({ data: { size: await keys.getCacheSize(req.storage) } }) },
        update: {
          summary: 'Set the cache size.',
          handler: async (req, f) => {
            await keys.setCacheSize(req.storage, f.get('size'));
            return { data: { size: f.get<number>('size') } };
          },
        },
      },
    },
  ];
}
