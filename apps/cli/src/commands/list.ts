import type { Command } from './context';
import { onlyPath } from './paths';
import { printKeys } from './keys-output';

export const command: Command = {
  args: 'PATH',
  summary: 'List the names under PATH (sends the LIST method).',
  flags: {},
  async run(ctx, { positionals }) {
    const path = onlyPath('list', positionals);
    return printKeys(ctx, path, await ctx.client.list(path));
  },
};
