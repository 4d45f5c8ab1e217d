import type { Command } from '../context';
import { println } from '../context';

export const command: Command = {
  args: '',
  summary: 'Seal the service: it forgets its root key until unsealed again.',
  flags: {},
  async run(ctx) {
    await ctx.client.sys.seal();
    println(ctx.io.stdout, 'Success! Service is sealed.');
    return 0;
  },
};
