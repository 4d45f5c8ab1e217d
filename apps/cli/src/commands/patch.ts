import type { Command } from './context';
import { writeLike } from './write-like';

export const command: Command = {
  args: 'PATH [-|K=V...]',
  summary: 'Patch the data at PATH (JSON merge patch): only the given fields change. K=V as for write.',
  flags: { force: { kind: 'boolean', aliases: ['f'], description: 'allow sending no data' } },
  run: (ctx, args) => writeLike(ctx, args, 'patch', (path, data) => ctx.client.patch(path, data)),
};
