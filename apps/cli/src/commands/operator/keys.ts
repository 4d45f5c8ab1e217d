import { UsageError, type ParsedArgs } from '../args';
import type { CommandContext } from '../context';
import { readHiddenLine } from '../stdin';

/**
 * The one key share a command takes: its argument, else a line read from stdin (without echo on
 * a terminal). `label` names it in the prompt and in errors, e.g. "Unseal Key".
 */
export async function keyArgument(ctx: CommandContext, positionals: string[], command: string, label: string): Promise<string> {
  if (positionals.length > 1) throw new UsageError(`${command} takes at most one key`);
  const key = (positionals[0] ?? (await readHiddenLine(ctx.io, `${label} (will be hidden): `))).trim();
  if (key === '') throw new UsageError(`no ${label.toLowerCase()} given`);
  return key;
}

/**
 * The one action flag given among `actions` (undefined: none, the command submits a key); more
 * than one, or one with a key argument, is a usage error.
 */
export function chosenAction<A extends string>(flags: ParsedArgs['flags'], positionals: string[], actions: readonly A[]): A | undefined {
  const chosen = actions.filter((action) => flags[action] !== undefined && flags[action] !== false);
  if (chosen.length > 1) throw new UsageError(`give at most one of ${actions.map((a) => `-${a}`).join(', ')}`);
  if (chosen.length > 0 && positionals.length > 0) throw new UsageError(`-${chosen[0]} takes no key`);
  return chosen[0];
}

export function splitList(value: unknown): string[] {
  return typeof value === 'string' ? value.split(',').map((item) => item.trim()).filter(Boolean) : [];
}
