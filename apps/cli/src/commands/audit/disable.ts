import type { Command } from '../context';
import { println } from '../context';
import { onlyPath } from '../paths';

export const command: Command = {
  args: 'PATH',
  summary: 'Disable the audit device at PATH.',
  flags: {},
  async run(ctx, { positionals }) {
    const path = onlyPath('audit disable', positionals).replace(/^\/+|\/+$/g, '');
    await ctx.client.delete(`sys/audit/${path}`);
    println(ctx.io.stdout, `Success! Disabled audit device (if it was enabled) at: ${path}/`);
    return 0;
  },
};
