import type { Envelope } from '@svc/sdk';
import type { CommandContext } from './context';
import { output, printWarnings } from './format';
import { notFound } from './paths';

/** The keys of a LIST answer as Vault prints them: "Keys", dashes, one per line; exit 2 when there are none. */
export function printKeys(ctx: CommandContext, path: string, listed: Envelope | null): number {
  const keys = listed?.data?.keys;
  if (!Array.isArray(keys)) return notFound(ctx, path);
  printWarnings(ctx, listed);
  output(ctx, keys, () => ['Keys', '----', ...keys.map(String)].join('\n'));
  return 0;
}
