import type { Command } from './context';
import { println } from './context';
import { printWarnings } from './format';
import { onlyPath } from './paths';

export const command: Command = {
  args: 'PATH',
  summary: 'Delete the data at PATH.',
  flags: {},
  async run(ctx, { positionals }) {
    const path = onlyPath('delete', positionals);
    printWarnings(ctx, await ctx.client.delete(path));
    println(ctx.io.stdout, `Success! Data deleted (if it existed) at: ${path}`);
    return 0;
  },
};
