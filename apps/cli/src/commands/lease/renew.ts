import type { Command } from '../context';
import { printSecret } from '../format';
import { exactly } from '../paths';

export const command: Command = {
  args: 'LEASE_ID',
  summary: 'Renew a lease, asking for -increment more time from now (within the lease\'s limits).',
  flags: { increment: { kind: 'string', aliases: ['i'], description: 'time asked for, e.g. 1h (default: the lease\'s own TTL)' } },
  async run(ctx, { flags, positionals }) {
    const [leaseId] = exactly('lease renew', positionals, ['LEASE_ID']);
    const secret = await ctx.client.write('sys/leases/renew', { lease_id: leaseId, ...(flags.increment !== undefined && { increment: flags.increment }) });
    printSecret(ctx, secret, `Success! Renewed lease: ${leaseId}`);
    return 0;
  },
};
