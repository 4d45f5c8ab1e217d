import { UsageError } from '../args';
import type { Command } from '../context';
import { println } from '../context';
import { exactly } from '../paths';

export const command: Command = {
  args: 'LEASE_ID | PREFIX',
  summary: 'Revoke a lease and its secret; -prefix revokes every lease under a prefix, -force ignores backend errors (with -prefix).',
  flags: {
    prefix: { kind: 'boolean', description: 'the argument is a prefix: revoke every lease under it' },
    force: { kind: 'boolean', aliases: ['f'], description: 'with -prefix: remove the leases even when the backend fails to revoke their secrets' },
  },
  async run(ctx, { flags, positionals }) {
    const [id] = exactly('lease revoke', positionals, ['LEASE_ID']);
    if (flags.force && !flags.prefix) throw new UsageError('-force goes with -prefix');
    if (flags.force) await ctx.client.write(`sys/leases/revoke-force/${id}`);
    else if (flags.prefix) await ctx.client.write(`sys/leases/revoke-prefix/${id}`);
    else await ctx.client.write('sys/leases/revoke', { lease_id: id });
    println(ctx.io.stdout, flags.prefix ? `Success! Revoked any leases with prefix: ${id}` : `Success! Revoked lease: ${id}`);
    return 0;
  },
};
