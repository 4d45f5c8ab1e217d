import { VERSION } from '@svc/api-contract';
import type { Command } from './context';
import { println } from './context';

export const command: Command = {
  args: '',
  summary: 'Print the version of this svc binary.',
  flags: {},
  async run(ctx) {
    println(ctx.io.stdout, `Secrets Service v${VERSION}`);
    return 0;
  },
};
