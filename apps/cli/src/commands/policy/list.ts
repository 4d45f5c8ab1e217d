import { UsageError } from '../args';
import type { Command } from '../context';
import { output } from '../format';

export const command: Command = {
  args: '',
  summary: 'List the names of the ACL policies.',
  flags: {},
  async run(ctx, { positionals }) {
    if (positionals.length > 0) throw new UsageError('policy list takes no arguments');
    const keys = ((await ctx.client.list('sys/policies/acl'))?.data?.keys ?? []) as string[];
    output(ctx, keys, () => keys.join('\n'));
    return 0;
  },
};
