import type { Command } from '../context';
import { printSecret } from '../format';
import { ACCESSOR_FLAG, tokenTarget } from './token-args';

export const command: Command = {
  args: '[TOKEN | ACCESSOR]',
  summary: 'Show a token\'s properties: the calling token by default, another by its value or (-accessor) accessor.',
  flags: ACCESSOR_FLAG,
  async run(ctx, args) {
    const target = tokenTarget(args, 'token lookup');
    const secret =
      target.kind === 'self'
        ? await ctx.client.read('auth/token/lookup-self')
        : target.kind === 'token'
          ? await ctx.client.write('auth/token/lookup', { token: target.token })
          : await ctx.client.write('auth/token/lookup-accessor', { accessor: target.accessor });
    printSecret(ctx, secret, 'The token has no properties to show.');
    return 0;
  },
};
