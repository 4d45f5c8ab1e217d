import type { Command } from '../context';
import { printSecret } from '../format';
import { ACCESSOR_FLAG, tokenTarget } from './token-args';

export const command: Command = {
  args: '[TOKEN | ACCESSOR]',
  summary: 'Renew a token (the calling one by default), extending its TTL by -increment, within its limits.',
  flags: { ...ACCESSOR_FLAG, increment: { kind: 'string', aliases: ['i'], description: 'TTL asked for from now, e.g. 1h (default: the token\'s own)' } },
  async run(ctx, args) {
    const target = tokenTarget(args, 'token renew');
    const increment = args.flags.increment === undefined ? {} : { increment: args.flags.increment };
    const secret =
      target.kind === 'self'
        ? await ctx.client.write('auth/token/renew-self', increment)
        : target.kind === 'token'
          ? await ctx.client.write('auth/token/renew', { token: target.token, ...increment })
          : await ctx.client.write('auth/token/renew-accessor', { accessor: target.accessor, ...increment });
    printSecret(ctx, secret, 'Success! The token was renewed.');
    return 0;
  },
};
