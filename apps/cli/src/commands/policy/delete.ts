import type { Command } from '../context';
import { println } from '../context';
import { exactly } from '../paths';

export const command: Command = {
  args: 'NAME',
  summary: 'Delete the ACL policy NAME; tokens that name it lose what it granted.',
  flags: {},
  async run(ctx, { positionals }) {
    const [name] = exactly('policy delete', positionals, ['NAME']);
    await ctx.client.delete(`sys/policies/acl/${name}`);
    println(ctx.io.stdout, `Success! Deleted policy: ${name}`);
    return 0;
  },
};
