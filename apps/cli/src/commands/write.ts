import type { Command } from './context';
import { writeLike } from './write-like';

export const command: Command = {
  args: 'PATH [-|K=V...]',
  summary: 'Write data to PATH. K=V sets a string, K=@FILE reads a file, K=- reads stdin, - reads a JSON object from stdin.',
  flags: { force: { kind: 'boolean', aliases: ['f'], description: 'allow writing no data' } },
  run: (ctx, args) => writeLike(ctx, args, 'write', (path, data) => ctx.client.write(path, data)),
};
