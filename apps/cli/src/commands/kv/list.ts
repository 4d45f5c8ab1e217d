import type { Command } from '../context';
import { printKeys } from '../keys-output';
import { apiPath, MOUNT_FLAG, onlyKvPath } from './kv-path';

export const command: Command = {
  args: 'PATH',
  summary: 'List the secret names under PATH in a kv engine.',
  flags: MOUNT_FLAG,
  async run(ctx, args) {
    const path = apiPath(await onlyKvPath(ctx, args, 'kv list'), 'metadata');
    return printKeys(ctx, path, await ctx.client.list(path));
  },
};
