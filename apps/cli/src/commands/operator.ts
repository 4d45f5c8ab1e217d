import type { InitResponse } from '@svc/sdk';
import { UsageError, type ParsedArgs } from './args';
import type { Command, CommandContext } from './context';
import { println } from './context';
import { keyValueTable, output } from './format';
import { readPgpKeyFile } from './pgp-keys';
import { sealStatusRows } from './status';
import { readHiddenLine } from './stdin';

export const operatorInitCommand: Command = {
  name: 'operator init',
  args: '',
  summary: 'Initialize the service: create the root key, split it into unseal keys, create the root token.',
  flags: {
    'key-shares': { kind: 'int', aliases: ['n'], description: 'number of unseal keys (default 5)' },
    'key-threshold': { kind: 'int', aliases: ['t'], description: 'unseal keys needed to unseal (default 3)' },
    'pgp-keys': { kind: 'string', description: 'comma-separated paths of PGP public key files, one per share' },
    'root-token-pgp-key': { kind: 'string', description: 'path of a PGP public key file for the root token' },
  },
  async run(ctx, { flags }) {
    const shares = (flags['key-shares'] as number | undefined) ?? 5;
    const threshold = (flags['key-threshold'] as number | undefined) ?? 3;
    const pgpKeyPaths = splitList(flags['pgp-keys']);
    const rootTokenPgpPath = flags['root-token-pgp-key'] as string | undefined;
    if (pgpKeyPaths.length > 0 && pgpKeyPaths.length !== shares) {
      throw new UsageError(`-pgp-keys has ${pgpKeyPaths.length} keys but -key-shares is ${shares}`);
    }
    const result = await ctx.client.sys.init({
      secret_shares: shares,
      secret_threshold: threshold,
      ...(pgpKeyPaths.length > 0 ? { pgp_keys: await Promise.all(pgpKeyPaths.map(readPgpKeyFile)) } : {}),
      ...(rootTokenPgpPath ? { root_token_pgp_key: await readPgpKeyFile(rootTokenPgpPath) } : {}),
    });
    output(ctx, initJson(result, shares, threshold), () => initText(result, shares, threshold));
    return 0;
  },
};

export const operatorUnsealCommand: Command = {
  name: 'operator unseal',
  args: '[KEY]',
  summary: 'Provide one unseal key share (prompted without echo when KEY is omitted), or -reset.',
  flags: { reset: { kind: 'boolean', description: 'discard the unseal keys given so far' } },
  async run(ctx, { flags, positionals }) {
    if (flags.reset && positionals.length > 0) throw new UsageError('give either a key or -reset, not both');
    const key = flags.reset ? undefined : await keyArgument(ctx, positionals, 'operator unseal', 'Unseal Key');
    const status = await ctx.client.sys.unseal(key === undefined ? { reset: true } : key);
    output(ctx, status, () => keyValueTable(sealStatusRows(status)));
    return 0;
  },
};

export const operatorSealCommand: Command = {
  name: 'operator seal',
  args: '',
  summary: 'Seal the service: it forgets its root key until unsealed again.',
  flags: {},
  async run(ctx) {
    await ctx.client.sys.seal();
    println(ctx.io.stdout, 'Success! Service is sealed.');
    return 0;
  },
};

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

function initJson(result: InitResponse, shares: number, threshold: number) {
  return {
    unseal_keys_b64: result.keys_base64,
    unseal_keys_hex: result.keys,
    unseal_shares: shares,
    unseal_threshold: threshold,
    root_token: result.root_token,
  };
}

function initText(result: InitResponse, shares: number, threshold: number): string {
  const keys = result.keys_base64.map((key, index) => `Unseal Key ${index + 1}: ${key}`);
  return [
    ...keys,
    '',
    `Initial Root Token: ${result.root_token}`,
    '',
    `Service initialized with ${shares} key shares and a key threshold of ${threshold}. Provide ${threshold} of`,
    'these keys with "svc operator unseal" each time the service starts or is sealed, and keep them',
    'apart: whoever holds the threshold can unseal the service.',
  ].join('\n');
}
