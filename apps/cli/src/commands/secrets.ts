import { UsageError } from './args';
import type { Command, CommandContext } from './context';
import { println } from './context';
import { keyValueTable, output, printWarnings, secretRows } from './format';

export const NOT_FOUND_EXIT_CODE = 2;

export const readCommand: Command = {
  name: 'read',
  args: 'PATH',
  summary: 'Read the data at PATH.',
  flags: {},
  async run(ctx, { positionals }) {
    const path = onlyPath('read', positionals);
    const secret = await ctx.client.read(path);
    if (!secret) return notFound(ctx, path);
    printWarnings(ctx, secret);
    output(ctx, secret, () => keyValueTable(secretRows(secret)));
    return 0;
  },
};

export const listCommand: Command = {
  name: 'list',
  args: 'PATH',
  summary: 'List the names under PATH (sends the LIST method).',
  flags: {},
  async run(ctx, { positionals }) {
    const path = onlyPath('list', positionals);
    const listed = await ctx.client.list(path);
    const keys = listed?.data?.keys;
    if (!Array.isArray(keys)) return notFound(ctx, path);
    printWarnings(ctx, listed);
    output(ctx, keys, () => ['Keys', '----', ...keys.map(String)].join('\n'));
    return 0;
  },
};

export const deleteCommand: Command = {
  name: 'delete',
  args: 'PATH',
  summary: 'Delete the data at PATH.',
  flags: {},
  async run(ctx, { positionals }) {
    const path = onlyPath('delete', positionals);
    const result = await ctx.client.delete(path);
    printWarnings(ctx, result);
    println(ctx.io.stdout, `Success! Data deleted (if it existed) at: ${path}`);
    return 0;
  },
};

export function onlyPath(command: string, positionals: string[]): string {
  if (positionals.length !== 1) throw new UsageError(`${command} takes exactly one PATH argument`);
  return positionals[0];
}

function notFound(ctx: CommandContext, path: string): number {
  println(ctx.io.stderr, `No value found at ${path}`);
  return NOT_FOUND_EXIT_CODE;
}
