import type { Command } from '../context';
import { println } from '../context';
import { printWarnings } from '../format';
import { onlyPath } from '../paths';

export const command: Command = {
  args: 'PATH',
  summary: 'Delete the namespace at PATH with everything in it (mounts, policies, tokens).',
  flags: {},
  async run(ctx, { positionals }) {
    const path = onlyPath('namespace delete', positionals).replace(/^\/+|\/+$/g, '');
    printWarnings(ctx, await ctx.client.delete(`sys/namespaces/${path}`));
    println(ctx.io.stdout, `Success! Namespace deleted at: ${path}/`);
    return 0;
  },
};
