import type { Command } from './context';
import { println } from './context';
import { storedToken } from './token-file';

export const command: Command = {
  args: '',
  summary: 'Print the token later commands send: SVC_TOKEN, else the one `svc login` stored.',
  flags: {},
  async run(ctx) {
    const token = ctx.io.env.SVC_TOKEN || (await storedToken(ctx.io.env));
    if (token) println(ctx.io.stdout, token);
    return 0;
  },
};
