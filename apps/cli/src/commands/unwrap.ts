import { UsageError } from './args';
import type { Command } from './context';
import { printSecret } from './format';

export const command: Command = {
  args: '[TOKEN]',
  summary: 'Unwrap a wrapping token (the argument, else the token sent with the request) and print what it wrapped; the token is spent.',
  flags: {},
  async run(ctx, { positionals }) {
    if (positionals.length > 1) throw new UsageError('unwrap takes at most one TOKEN argument');
    const secret = positionals[0] === undefined ? await ctx.client.write('sys/wrapping/unwrap') : await ctx.client.write('sys/wrapping/unwrap', { token: positionals[0] });
    printSecret(ctx, secret, 'Success! The token was unwrapped; it wrapped no data.');
    return 0;
  },
};
