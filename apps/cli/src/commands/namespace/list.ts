import type { Command } from '../context';
import { printKeys } from '../keys-output';

export const command: Command = {
  args: '',
  summary: 'List the namespaces directly inside the current namespace (-namespace).',
  flags: {},
  async run(ctx) {
    return printKeys(ctx, 'sys/namespaces', await ctx.client.list('sys/namespaces'));
  },
};
