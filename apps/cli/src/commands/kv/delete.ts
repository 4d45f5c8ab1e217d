import type { Command } from '../context';
import { println } from '../context';
import { apiPath, MOUNT_FLAG, onlyKvPath, VERSIONS_FLAG, versionsFlag } from './kv-path';

export const command: Command = {
  args: 'PATH',
  summary: 'Delete a secret: on version 2 the latest version (or -versions), which kv undelete restores.',
  flags: { ...MOUNT_FLAG, ...VERSIONS_FLAG },
  async run(ctx, args) {
    const kv = await onlyKvPath(ctx, args, 'kv delete');
    if (kv.version === 2 && args.flags.versions !== undefined) {
      const path = apiPath(kv, 'delete');
      await ctx.client.write(path, { versions: versionsFlag(args.flags, 'kv delete') });
      println(ctx.io.stdout, `Success! Data deleted (if it existed) at: ${path}`);
      return 0;
    }
    const path = apiPath(kv, 'data');
    await ctx.client.delete(path);
    println(ctx.io.stdout, `Success! Data deleted (if it existed) at: ${path}`);
    return 0;
  },
};
