import { UsageError } from '../args';
import type { Command } from '../context';
import { output } from '../format';
import { ACCESSOR_FLAG } from './token-args';

export const command: Command = {
  args: '[TOKEN | ACCESSOR] PATH',
  summary: 'What a token may do on PATH: the calling token by default, another by value or (-accessor) accessor.',
  flags: ACCESSOR_FLAG,
  async run(ctx, { flags, positionals }) {
    if (positionals.length < 1 || positionals.length > 2) throw new UsageError('token capabilities takes [TOKEN] PATH');
    const path = positionals[positionals.length - 1];
    const subject = positionals.length === 2 ? positionals[0] : undefined;
    if (flags.accessor && subject === undefined) throw new UsageError('-accessor needs the ACCESSOR argument before PATH');
    const answer =
      subject === undefined
        ? await ctx.client.write('sys/capabilities-self', { paths: [path] })
        : flags.accessor
          ? await ctx.client.write('sys/capabilities-accessor', { accessor: subject, paths: [path] })
          : await ctx.client.write('sys/capabilities', { token: subject, paths: [path] });
    const body = (answer?.data ?? answer ?? {}) as Record<string, unknown>;
    const capabilities = (body[path] ?? body.capabilities ?? []) as string[];
    output(ctx, capabilities, () => [...capabilities].sort().join(', '));
    return 0;
  },
};
