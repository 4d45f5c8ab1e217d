import type { PathDeclaration } from '@svc/framework';
import { MIN_CACHE_SIZE } from '../key-store';
import type { TransitServices } from '../services';

export function configPaths({ keys, settings, storage }: TransitServices): PathDeclaration[] {
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
        read: { summary: 'Read the key settings.', handler: async () => ({ data: { ...(await settings.getKeysConfig(storage)) } }) },
        update: {
          summary: 'Update the key settings.',
          handler: async (_req, f) => {
            const config = { disable_upsert: f.get<boolean>('disable_upsert') };
            await settings.setKeysConfig(storage, config);
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
        read: { summary: 'Read the cache size.', handler: async () => ({ data: { size: await keys.getCacheSize(storage) } }) },
        update: {
          summary: 'Set the cache size.',
          handler: async (_req, f) => {
            await keys.setCacheSize(storage, f.get('size'));
            return { data: { size: f.get<number>('size') } };
          },
        },
      },
    },
  ];
}
