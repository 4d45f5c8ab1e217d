import type { Command } from '../context';
import { println } from '../context';

export const command: Command = {
  args: '',
  summary: 'Make the gateway that answers give up its active duties (lease expiry) to a peer; needs sudo.',
  flags: {},
  async run(ctx) {
    await ctx.client.sys.stepDown();
    println(ctx.io.stdout, 'Success! Stepped down: another gateway takes the active duties.');
    return 0;
  },
};
