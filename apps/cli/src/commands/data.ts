import { readFile } from 'node:fs/promises';
import { UsageError } from './args';
import type { CliIO } from './context';
import { readAll } from './stdin';

/** The request body from the arguments after PATH. Values never appear in errors. */
export async function parseData(args: string[], io: CliIO): Promise<Record<string, unknown>> {
  const data: Record<string, unknown> = {};
  let stdinUsed = false;
  const stdin = () => {
    if (stdinUsed) throw new UsageError('stdin (-) can be used only once');
    stdinUsed = true;
    return readAll(io);
  };
  for (const [index, arg] of args.entries()) {
    if (arg === '-') {
      Object.assign(data, parseJsonObject(await stdin()));
      continue;
    }
    const equals = arg.indexOf('=');
    if (equals <= 0) throw new UsageError(`data argument ${index + 1} (after PATH) is not of the form K=V`);
    const key = arg.slice(0, equals);
    const value = arg.slice(equals + 1);
    if (value === '-') data[key] = (await stdin()).replace(/\r?\n$/, '');
    else if (value.startsWith('@')) data[key] = await readValueFile(key, value.slice(1));
    else data[key] = value;
  }
  return data;
}

/** `K=V` strings of a repeatable flag (`-options`, `-metadata`, ...) as an object. */
export function keyValuePairs(pairs: string[], flag: string): Record<string, string> {
  return Object.fromEntries(
    pairs.map((pair) => {
      const equals = pair.indexOf('=');
      if (equals <= 0) throw new UsageError(`-${flag} takes K=V pairs, got "${pair}"`);
      return [pair.slice(0, equals), pair.slice(equals + 1)];
    }),
  );
}

function parseJsonObject(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // The parser's message may quote the input, which may be secret.
    throw new UsageError('stdin is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError('stdin must hold a JSON object');
  }
  return parsed as Record<string, unknown>;
}

async function readValueFile(key: string, path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read file "${path}" for ${key} (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
}
