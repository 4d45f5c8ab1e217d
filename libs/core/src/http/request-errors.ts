/**
 * What an unexpected error may contribute to a log line: its class and a stack of code locations,
 * never its message, which could quote a secret the failing code was handling.
 */
export function describeRequestError(err: unknown): { type: string; stack?: string } {
  if (!(err instanceof Error)) return { type: typeof err };
  const frames = err.stack?.split('\n').slice(1).join('\n');
  return { type: err.name, stack: frames };
}
