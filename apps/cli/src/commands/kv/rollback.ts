import { UsageError } from '../args';
import type { Command } from '../context';
import { apiPath, MOUNT_FLAG, onlyKvPath, printKvWrite, requireV2 } from './kv-path';

export const command: Command = {
  args: 'PATH',
  summary: 'Write the data of an older version (-version) of a version 2 secret as its newest version.',
  flags: { ...MOUNT_FLAG, version: { kind: 'int', description: 'the version to roll back to' } },
  async run(ctx, args) {
    const kv = await onlyKvPath(ctx, args, 'kv rollback');
    requireV2(kv, 'kv rollback');
    const version = args.flags.version as number | undefined;
    if (version === undefined || version < 1) throw new UsageError('kv rollback needs -version, a version number');
    const metadata = await ctx.client.read(apiPath(kv, 'metadata'));
    const current = Number(metadata?.data?.current_version ?? 0);
    if (!metadata || current === 0) throw new UsageError(`no secret at ${apiPath(kv, 'data')}`);
    const old = await ctx.client.read(apiPath(kv, 'data'), { version });
    const data = (old?.data as { data?: Record<string, unknown> | null } | undefined)?.data;
    if (!data) throw new UsageError(`version ${version} of ${apiPath(kv, 'data')} is deleted, destroyed or does not exist`);
    printKvWrite(ctx, kv, await ctx.client.write(apiPath(kv, 'data'), { data, options: { cas: current } }));
    return 0;
  },
};
