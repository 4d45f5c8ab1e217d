import { setTimeout as delay } from 'node:timers/promises';
import type { Command } from '../context';
import { println } from '../context';
import { exactly } from '../paths';

const POLL_INTERVAL_MS = 200;

export const command: Command = {
  args: 'SOURCE DESTINATION',
  summary: 'Move the secrets engine (or, with auth/ paths, the auth method) at SOURCE to DESTINATION, with its data.',
  flags: {},
  async run(ctx, { positionals }) {
    const [from, to] = exactly('secrets move', positionals, ['SOURCE', 'DESTINATION']).map((path) => `${path.replace(/^\/+|\/+$/g, '')}/`);
    const started = await ctx.client.write('sys/remount', { from, to });
    const migrationId = String(started?.data?.migration_id ?? (started as { migration_id?: string } | null)?.migration_id ?? '');
    println(ctx.io.stdout, `Started moving ${from} to ${to}, with migration ID ${migrationId}`);
    for (;;) {
      const status = await ctx.client.read(`sys/remount/status/${migrationId}`);
      const info = (status?.data?.migration_info ?? {}) as { status?: string };
      if (info.status === 'success') break;
      if (info.status === 'failure') throw new Error(`moving ${from} to ${to} failed`);
      await delay(POLL_INTERVAL_MS);
    }
    println(ctx.io.stdout, `Success! Finished moving ${from} to ${to}, with migration ID ${migrationId}`);
    return 0;
  },
};
