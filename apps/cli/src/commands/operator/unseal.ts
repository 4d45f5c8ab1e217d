import { UsageError } from '../args';
import type { Command } from '../context';
import { keyValueTable, output } from '../format';
import { sealStatusRows } from '../status';
import { keyArgument } from './keys';

export const command: Command = {
  args: '[KEY]',
  summary: 'Provide one unseal key share (prompted without echo when KEY is omitted), or -reset.',
  flags: {
    reset: { kind: 'boolean', description: 'discard the unseal keys given so far' },
    migrate: { kind: 'boolean', description: "during a seal migration: KEY is a share of the old seal's keys (unseal or recovery key)" },
  },
  async run(ctx, { flags, positionals }) {
    if (flags.reset && positionals.length > 0) throw new UsageError('give either a key or -reset, not both');
    if (flags.reset && flags.migrate) throw new UsageError('give either -migrate with a key or -reset, not both');
    const key = flags.reset ? undefined : await keyArgument(ctx, positionals, 'operator unseal', 'Unseal Key');
    const status = await ctx.client.sys.unseal(key === undefined ? { reset: true } : flags.migrate ? { key, migrate: true } : key);
    output(ctx, status, () => keyValueTable(sealStatusRows(status)));
    return 0;
  },
};
