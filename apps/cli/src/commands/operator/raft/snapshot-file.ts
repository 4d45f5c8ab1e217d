import { UsageError } from '../../args';

/** The one FILE argument of the snapshot commands. */
export function snapshotFile(positionals: string[], command: string): string {
  if (positionals.length !== 1) throw new UsageError(`${command} takes exactly one argument, the snapshot file`);
  return positionals[0];
}
