import type { Envelope } from '@svc/sdk';
import { UsageError, type ParsedArgs } from './args';
import type { CommandContext } from './context';
import { parseData } from './data';
import { printSecret } from './format';

/** `write` and `patch`: PATH and its data from the arguments, the answer printed as a secret. */
export async function writeLike(
  ctx: CommandContext,
  { flags, positionals }: ParsedArgs,
  name: string,
  send: (path: string, data: Record<string, unknown>) => Promise<Envelope | null>,
): Promise<number> {
  const [path, ...pairs] = positionals;
  if (!path) throw new UsageError(`${name} needs a PATH argument`);
  const data = await parseData(pairs, ctx.io);
  if (Object.keys(data).length === 0 && !flags.force) {
    throw new UsageError('no data given: pass K=V pairs, - for JSON on stdin, or -force to send nothing');
  }
  printSecret(ctx, await send(path, data), `Success! Data written to: ${path}`);
  return 0;
}
