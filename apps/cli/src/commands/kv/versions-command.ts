import type { Command } from '../context';
import { println } from '../context';
import { apiPath, MOUNT_FLAG, onlyKvPath, requireV2, VERSIONS_FLAG, versionsFlag } from './kv-path';

/** `kv undelete` and `kv destroy`: -versions of PATH sent to MOUNT/undelete or MOUNT/destroy. */
export function versionsCommand(verb: 'undelete' | 'destroy', summary: string): Command {
  return {
    args: 'PATH',
    summary,
    flags: { ...MOUNT_FLAG, ...VERSIONS_FLAG },
    async run(ctx, args) {
      const kv = await onlyKvPath(ctx, args, `kv ${verb}`);
      requireV2(kv, `kv ${verb}`);
      const versions = versionsFlag(args.flags, `kv ${verb}`);
      const path = apiPath(kv, verb);
      await ctx.client.write(path, { versions });
      println(ctx.io.stdout, `Success! Data written to: ${path}`);
      return 0;
    },
  };
}
