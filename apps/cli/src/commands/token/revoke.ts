import { UsageError } from '../args';
import type { Command } from '../context';
import { println } from '../context';
import { ACCESSOR_FLAG, tokenTarget } from './token-args';

export const command: Command = {
  args: '[TOKEN | ACCESSOR]',
  summary: 'Revoke a token and its children (-mode=orphan: keep the children), or -self, or by -accessor.',
  flags: {
    ...ACCESSOR_FLAG,
    self: { kind: 'boolean', description: 'revoke the calling token' },
    mode: { kind: 'string', description: 'orphan: revoke the token but not its children' },
  },
  async run(ctx, args) {
    const target = tokenTarget(args, 'token revoke');
    if (Boolean(args.flags.self) === (target.kind !== 'self')) throw new UsageError('give a TOKEN (or -accessor ACCESSOR) or -self, exactly one');
    const mode = args.flags.mode;
    if (mode !== undefined && mode !== 'orphan') throw new UsageError('-mode must be orphan');
    if (mode === 'orphan' && target.kind !== 'token') throw new UsageError('-mode=orphan takes a TOKEN argument');
    if (target.kind === 'self') await ctx.client.write('auth/token/revoke-self');
    else if (target.kind === 'accessor') await ctx.client.write('auth/token/revoke-accessor', { accessor: target.accessor });
    else await ctx.client.write(mode === 'orphan' ? 'auth/token/revoke-orphan' : 'auth/token/revoke', { token: target.token });
    println(ctx.io.stdout, 'Success! Revoked token (if it existed)');
    return 0;
  },
};
