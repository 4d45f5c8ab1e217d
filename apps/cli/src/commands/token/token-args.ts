import { UsageError, type FlagSpecs, type ParsedArgs } from '../args';

export const ACCESSOR_FLAG: FlagSpecs = {
  accessor: { kind: 'boolean', description: 'the argument is a token accessor, not a token' },
};

/** Which token a command is about: none (the calling token), a token, or an accessor (-accessor). */
export type TokenTarget = { kind: 'self' } | { kind: 'token'; token: string } | { kind: 'accessor'; accessor: string };

export function tokenTarget({ flags, positionals }: ParsedArgs, command: string): TokenTarget {
  if (positionals.length > 1) throw new UsageError(`${command} takes at most one TOKEN (or ACCESSOR) argument`);
  const [value] = positionals;
  if (flags.accessor) {
    if (value === undefined) throw new UsageError(`${command} -accessor needs the ACCESSOR argument`);
    return { kind: 'accessor', accessor: value };
  }
  return value === undefined ? { kind: 'self' } : { kind: 'token', token: value };
}
