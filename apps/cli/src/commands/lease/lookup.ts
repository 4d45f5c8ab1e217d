import type { Command } from '../context';
import { printSecret } from '../format';
import { exactly } from '../paths';

export const command: Command = {
  args: 'LEASE_ID',
  summary: 'Show a lease: when it was issued, when it expires, whether it can be renewed.',
  flags: {},
  async run(ctx, { positionals }) {
    const [leaseId] = exactly('lease lookup', positionals, ['LEASE_ID']);
    const secret = await ctx.client.write('sys/leases/lookup', { lease_id: leaseId });
    printSecret(ctx, secret, 'The lease has no properties to show.');
    return 0;
  },
};
