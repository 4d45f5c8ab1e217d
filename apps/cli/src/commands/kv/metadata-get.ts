import type { Command } from '../context';
import { keyValueTable, output } from '../format';
import { notFound } from '../paths';
import { apiPath, MOUNT_FLAG, onlyKvPath, requireV2, section, sortedRows } from './kv-path';

export const command: Command = {
  args: 'PATH',
  summary: 'Read the metadata of a version 2 secret and of each of its versions.',
  flags: MOUNT_FLAG,
  async run(ctx, args) {
    const kv = await onlyKvPath(ctx, args, 'kv metadata get');
    requireV2(kv, 'kv metadata get');
    const path = apiPath(kv, 'metadata');
    const secret = await ctx.client.read(path);
    if (!secret?.data) return notFound(ctx, path);
    const { versions, ...metadata } = secret.data as { versions?: Record<string, Record<string, unknown>> };
    output(ctx, ctx.field === undefined ? secret : secret.data, () =>
      [
        section('Metadata Path', path),
        section('Metadata', keyValueTable(sortedRows(metadata))),
        ...Object.entries(versions ?? {})
          .sort(([a], [b]) => Number(a) - Number(b))
          .map(([version, info]) => section(`Version ${version}`, keyValueTable(sortedRows(info)))),
      ].join('\n\n'),
    );
    return 0;
  },
};
