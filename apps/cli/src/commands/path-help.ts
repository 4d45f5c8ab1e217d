import type { Command } from './context';
import { println } from './context';
import { output } from './format';
import { onlyPath } from './paths';

export const command: Command = {
  args: 'PATH',
  summary: 'Print the help of the API path PATH: what it does, its fields and operations.',
  flags: {},
  async run(ctx, { positionals }) {
    const path = onlyPath('path-help', positionals);
    const answer = await ctx.client.request<{ help?: string }>('GET', path, { query: { help: 1 } });
    const help = answer.body?.help ?? '';
    if (ctx.format === 'table' && ctx.field === undefined) println(ctx.io.stdout, help.trimEnd());
    else output(ctx, answer.body, () => help);
    return 0;
  },
};
