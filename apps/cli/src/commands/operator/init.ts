import type { InitResponse } from '@svc/sdk';
import { UsageError } from '../args';
import type { Command } from '../context';
import { output } from '../format';
import { readPgpKeyFile } from './pgp-keys';
import { splitList } from './keys';

export const command: Command = {
  args: '',
  summary: 'Initialize the service: create the root key and its unseal keys (or, with an auto-unseal seal, recovery keys) and the root token.',
  flags: {
    'key-shares': { kind: 'int', aliases: ['n'], description: 'number of unseal keys (default 5)' },
    'key-threshold': { kind: 'int', aliases: ['t'], description: 'unseal keys needed to unseal (default 3)' },
    'pgp-keys': { kind: 'string', description: 'comma-separated paths of PGP public key files, one per share' },
    'recovery-shares': { kind: 'int', description: 'auto-unseal seal: number of recovery keys (default 5)' },
    'recovery-threshold': { kind: 'int', description: 'auto-unseal seal: recovery keys needed to authorize an operation (default 3)' },
    'recovery-pgp-keys': { kind: 'string', description: 'auto-unseal seal: comma-separated paths of PGP public key files, one per recovery key' },
    'root-token-pgp-key': { kind: 'string', description: 'path of a PGP public key file for the root token' },
  },
  async run(ctx, { flags }) {
    const recovery = ['recovery-shares', 'recovery-threshold', 'recovery-pgp-keys'].some((name) => flags[name] !== undefined);
    if (recovery && ['key-shares', 'key-threshold', 'pgp-keys'].some((name) => flags[name] !== undefined)) {
      throw new UsageError('give unseal key flags (-key-*, -pgp-keys) for a shamir seal or recovery key flags (-recovery-*) for an auto-unseal seal, not both');
    }
    const prefix = recovery ? 'recovery-' : 'key-';
    const split: KeySplit = {
      kind: recovery ? 'recovery' : 'unseal',
      shares: (flags[`${prefix}shares`] as number | undefined) ?? 5,
      threshold: (flags[`${prefix}threshold`] as number | undefined) ?? 3,
    };
    const pgpFlag = recovery ? 'recovery-pgp-keys' : 'pgp-keys';
    const pgpKeyPaths = splitList(flags[pgpFlag]);
    const rootTokenPgpPath = flags['root-token-pgp-key'] as string | undefined;
    if (pgpKeyPaths.length > 0 && pgpKeyPaths.length !== split.shares) {
      throw new UsageError(`-${pgpFlag} has ${pgpKeyPaths.length} keys but -${prefix}shares is ${split.shares}`);
    }
    const pgpKeys = pgpKeyPaths.length > 0 ? await Promise.all(pgpKeyPaths.map(readPgpKeyFile)) : undefined;
    const result = await ctx.client.sys.init({
      ...(recovery
        ? { recovery_shares: split.shares, recovery_threshold: split.threshold, ...(pgpKeys ? { recovery_pgp_keys: pgpKeys } : {}) }
        : { secret_shares: split.shares, secret_threshold: split.threshold, ...(pgpKeys ? { pgp_keys: pgpKeys } : {}) }),
      ...(rootTokenPgpPath ? { root_token_pgp_key: await readPgpKeyFile(rootTokenPgpPath) } : {}),
    });
    output(ctx, initJson(result, split), () => initText(result, split));
    return 0;
  },
};

/** How the keys of an init were split: unseal keys (shamir seal) or recovery keys (auto-unseal). */
interface KeySplit {
  kind: 'unseal' | 'recovery';
  shares: number;
  threshold: number;
}

function initJson(result: InitResponse, split: KeySplit) {
  if (split.kind === 'recovery') {
    return {
      recovery_keys_b64: result.recovery_keys_base64 ?? [],
      recovery_keys_hex: result.recovery_keys ?? [],
      recovery_keys_shares: split.shares,
      recovery_keys_threshold: split.threshold,
      root_token: result.root_token,
    };
  }
  return {
    unseal_keys_b64: result.keys_base64,
    unseal_keys_hex: result.keys,
    unseal_shares: split.shares,
    unseal_threshold: split.threshold,
    root_token: result.root_token,
  };
}

function initText(result: InitResponse, split: KeySplit): string {
  const recovery = split.kind === 'recovery';
  const keys = (recovery ? (result.recovery_keys_base64 ?? []) : result.keys_base64).map((key, index) => `${recovery ? 'Recovery' : 'Unseal'} Key ${index + 1}: ${key}`);
  const advice = recovery
    ? [
        `Service initialized with ${split.shares} recovery keys and a recovery key threshold of ${split.threshold}.`,
        'The seal unseals the service by itself; recovery keys cannot unseal it. They authorize',
        'generating a root token and rekeying the recovery keys: keep them apart.',
      ]
    : [
        `Service initialized with ${split.shares} key shares and a key threshold of ${split.threshold}. Provide ${split.threshold} of`,
        'these keys with "svc operator unseal" each time the service starts or is sealed, and keep them',
        'apart: whoever holds the threshold can unseal the service.',
      ];
  return [...keys, '', `Initial Root Token: ${result.root_token}`, '', ...advice].join('\n');
}
