import type { Command } from '../context';
import { printSecret } from '../format';
import { notFound, onlyPath } from '../paths';

export const command: Command = {
  args: 'PATH',
  summary: 'Show the namespace at PATH (its ID and path).',
  flags: {},
  async run(ctx, { positionals }) {
    const path = onlyPath('namespace lookup', positionals).replace(/^\/+|\/+$/g, '');
    const secret = await ctx.client.read(`sys/namespaces/${path}`);
    if (!secret) return notFound(ctx, path);
    printSecret(ctx, secret, `Namespace ${path}/ exists.`);
    return 0;
  },
};
