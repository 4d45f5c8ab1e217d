import type { Command } from '../context';
import { println } from '../context';
import { output } from '../format';
import { exactly } from '../paths';

export const command: Command = {
  args: 'NAME',
  summary: 'Print the text of the ACL policy NAME.',
  flags: {},
  async run(ctx, { positionals }) {
    const [name] = exactly('policy read', positionals, ['NAME']);
    const secret = await ctx.client.read(`sys/policies/acl/${name}`);
    if (!secret) {
      println(ctx.io.stderr, `No policy named: ${name}`);
      return 2;
    }
    output(ctx, ctx.field === undefined ? secret : secret.data, () => String(secret.data?.policy ?? '').trimEnd());
    return 0;
  },
};
