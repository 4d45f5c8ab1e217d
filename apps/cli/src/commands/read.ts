import type { Command } from './context';
import { printSecret } from './format';
import { notFound } from './paths';
import { parseData } from './data';
import { UsageError } from './args';

export const command: Command = {
  args: 'PATH [K=V...]',
  summary: 'Read the data at PATH; K=V pairs are sent as query parameters.',
  flags: {},
  async run(ctx, { positionals }) {
    const [path, ...pairs] = positionals;
    if (!path) throw new UsageError('read needs a PATH argument');
    const query = Object.fromEntries(Object.entries(await parseData(pairs, ctx.io)).map(([key, value]) => [key, String(value)]));
    const secret = await ctx.client.read(path, query);
    if (!secret) return notFound(ctx, path);
    printSecret(ctx, secret, `Success! The answer at ${path} holds no data.`);
    return 0;
  },
};
