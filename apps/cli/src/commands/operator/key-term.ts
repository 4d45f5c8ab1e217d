import type { CommandContext } from '../context';
import { keyValueTable, output } from '../format';

/** Prints the barrier's active key term (sys/key-status), after `heading` in table format. */
export async function printKeyTerm(ctx: CommandContext, heading?: string): Promise<number> {
  const secret = await ctx.client.read('sys/key-status');
  const status = (secret?.data ?? {}) as { term?: number; install_time?: string };
  const table = keyValueTable([
    ['Key Term', status.term],
    ['Install Time', status.install_time],
  ]);
  output(ctx, status, () => (heading ? `${heading}\n\n${table}` : table));
  return 0;
}
