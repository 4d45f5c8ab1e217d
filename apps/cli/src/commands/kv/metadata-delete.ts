import type { Command } from '../context';
import { println } from '../context';
import { apiPath, MOUNT_FLAG, onlyKvPath, requireV2 } from './kv-path';

export const command: Command = {
  args: 'PATH',
  summary: 'Delete a version 2 secret with all its versions and metadata.',
  flags: MOUNT_FLAG,
  async run(ctx, args) {
    const kv = await onlyKvPath(ctx, args, 'kv metadata delete');
    requireV2(kv, 'kv metadata delete');
    const path = apiPath(kv, 'metadata');
    await ctx.client.delete(path);
    println(ctx.io.stdout, `Success! Data deleted (if it existed) at: ${path}`);
    return 0;
  },
};
