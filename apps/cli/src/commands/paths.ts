import { UsageError } from './args';
import type { CommandContext } from './context';
import { println } from './context';

export const NOT_FOUND_EXIT_CODE = 2;

/** The one PATH argument of `command`. */
export function onlyPath(command: string, positionals: string[]): string {
  if (positionals.length !== 1) throw new UsageError(`${command} takes exactly one PATH argument (got ${positionals.length})`);
  return positionals[0];
}

/** Exactly `count` arguments named in `names` (for the error), e.g. ["SOURCE", "DESTINATION"]. */
export function exactly(command: string, positionals: string[], names: string[]): string[] {
  if (positionals.length !== names.length) {
    throw new UsageError(`${command} takes ${names.join(' ')} (${names.length} argument${names.length === 1 ? '' : 's'}, got ${positionals.length})`);
  }
  return positionals;
}

export function notFound(ctx: CommandContext, path: string): number {
  println(ctx.io.stderr, `No value found at ${path}`);
  return NOT_FOUND_EXIT_CODE;
}
