import type { RekeyStatus, RekeyTarget, RekeyVerificationStatus } from '@svc/sdk';
import { UsageError } from '../args';
import type { Command, CommandContext } from '../context';
import { println } from '../context';
import { keyValueTable, output, type Row } from '../format';
import { chosenAction, keyArgument, splitList } from './keys';
import { readPgpKeyFile } from './pgp-keys';

/** The actions of `operator rekey` other than submitting a key; at most one per call. */
const ACTIONS = ['init', 'cancel', 'status', 'backup-retrieve', 'backup-delete'] as const;

export const command: Command = {
  args: '[KEY]',
  summary: 'Rekey the unseal keys (or, with -target=recovery, the recovery keys): -init, then one current key per call.',
  flags: {
    init: { kind: 'boolean', description: 'start a rekey (with -key-shares, -key-threshold, -pgp-keys, -backup, -verify)' },
    cancel: { kind: 'boolean', description: 'cancel the rekey (with -verify: restart its verification); the current keys stay valid' },
    status: { kind: 'boolean', description: 'print the progress of the rekey (with -verify: of its verification)' },
    target: { kind: 'string', description: 'barrier (the unseal keys, default) or recovery' },
    'key-shares': { kind: 'int', aliases: ['n'], description: 'number of new key shares (default 5)' },
    'key-threshold': { kind: 'int', aliases: ['t'], description: 'new shares needed to rebuild the key (default 3)' },
    'pgp-keys': { kind: 'string', description: 'comma-separated paths of PGP public key files, one per new share' },
    backup: { kind: 'boolean', description: 'with -pgp-keys: keep the encrypted new shares in storage (-backup-retrieve)' },
    verify: {
      kind: 'boolean',
      description: 'with -init: the key changes only once the new shares are verified; otherwise act on the verification (submit a new share, -status, -cancel)',
    },
    nonce: { kind: 'string', description: 'nonce of the operation (default: read from its status)' },
    'backup-retrieve': { kind: 'boolean', description: 'print the backup of PGP-encrypted shares of the last rekey (needs a token with sudo)' },
    'backup-delete': { kind: 'boolean', description: 'delete that backup (needs a token with sudo)' },
  },
  async run(ctx, { flags, positionals }) {
    const target = rekeyTarget(flags.target);
    const sys = ctx.client.sys;
    const verify = Boolean(flags.verify);
    switch (chosenAction(flags, positionals, ACTIONS)) {
      case 'init': {
        const shares = (flags['key-shares'] as number | undefined) ?? 5;
        const pgpKeyPaths = splitList(flags['pgp-keys']);
        if (pgpKeyPaths.length > 0 && pgpKeyPaths.length !== shares) {
          throw new UsageError(`-pgp-keys has ${pgpKeyPaths.length} keys but -key-shares is ${shares}`);
        }
        const status = await sys.rekeyInit(target, {
          secret_shares: shares,
          secret_threshold: (flags['key-threshold'] as number | undefined) ?? 3,
          ...(pgpKeyPaths.length > 0 && { pgp_keys: await Promise.all(pgpKeyPaths.map(readPgpKeyFile)) }),
          backup: Boolean(flags.backup),
          require_verification: verify,
        });
        output(ctx, status, () => keyValueTable(rekeyRows(status)));
        return 0;
      }
      case 'cancel':
        if (verify) {
          const status = await sys.rekeyVerificationRestart(target);
          output(ctx, status, () => keyValueTable(verificationRows(status)));
        } else {
          await sys.rekeyCancel(target);
          println(ctx.io.stdout, 'Success! Canceled rekeying (if it was started); the current keys stay valid.');
        }
        return 0;
      case 'status':
        if (verify) {
          const status = await sys.rekeyVerificationStatus(target);
          output(ctx, status, () => keyValueTable(verificationRows(status)));
        } else {
          const status = await sys.rekeyStatus(target);
          output(ctx, status, () => keyValueTable(rekeyRows(status)));
        }
        return 0;
      case 'backup-retrieve': {
        const backup = await sys.rekeyBackup(target);
        output(ctx, backup, () => keyValueTable([['Nonce', backup.nonce], ...Object.entries(backup.keys).map(([fp, keys]): Row => [fp, keys.join(', ')])]));
        return 0;
      }
      case 'backup-delete':
        await sys.rekeyBackupDelete(target);
        println(ctx.io.stdout, 'Success! Deleted the rekey backup (if it existed).');
        return 0;
      default:
        return verify ? submitVerification(ctx, target, flags.nonce, positionals) : submitKey(ctx, target, flags.nonce, positionals);
    }
  },
};

async function submitKey(ctx: CommandContext, target: RekeyTarget, nonceFlag: unknown, positionals: string[]): Promise<number> {
  const sys = ctx.client.sys;
  const nonce = typeof nonceFlag === 'string' ? nonceFlag : (await sys.rekeyStatus(target)).nonce;
  if (!nonce) throw new UsageError('no rekey is in progress: start one with -init');
  const key = await keyArgument(ctx, positionals, 'operator rekey', target === 'recovery' ? 'Recovery Key' : 'Unseal Key');
  const status = await sys.rekeyUpdate(target, key, nonce);
  output(ctx, status, () => (status.complete ? completionText(status, target) : keyValueTable(rekeyRows(status))));
  return 0;
}

async function submitVerification(ctx: CommandContext, target: RekeyTarget, nonceFlag: unknown, positionals: string[]): Promise<number> {
  const sys = ctx.client.sys;
  const nonce = typeof nonceFlag === 'string' ? nonceFlag : (await sys.rekeyVerificationStatus(target)).nonce;
  if (!nonce) throw new UsageError('no rekey verification is in progress');
  const key = await keyArgument(ctx, positionals, 'operator rekey', 'New Key');
  const status = await sys.rekeyVerify(target, key, nonce);
  output(ctx, status, () =>
    status.complete ? 'Success! Rekey verified: the new keys are now in force and the old ones no longer work.' : keyValueTable(verificationRows(status)),
  );
  return 0;
}

function rekeyTarget(value: unknown): RekeyTarget {
  if (value === undefined || value === 'barrier') return 'barrier';
  if (value === 'recovery') return 'recovery';
  throw new UsageError('-target must be barrier or recovery');
}

function rekeyRows(status: RekeyStatus): Row[] {
  return [
    ['Nonce', status.nonce || 'n/a'],
    ['Started', status.started],
    ['Rekey Progress', `${status.progress}/${status.required}`],
    ['New Shares', status.n],
    ['New Threshold', status.t],
    ['Verification Required', status.verification_required],
    ...(status.verification_nonce ? [['Verification Nonce', status.verification_nonce] as Row] : []),
    ...(status.pgp_fingerprints ? [['PGP Fingerprints', status.pgp_fingerprints.join(', ')] as Row] : []),
    ['Backup', status.backup],
  ];
}

function verificationRows(status: RekeyVerificationStatus): Row[] {
  return [
    ['Nonce', status.nonce || 'n/a'],
    ['Started', status.started ?? true],
    ['New Shares', status.n],
    ['New Threshold', status.t],
    ['Verification Progress', `${status.progress ?? 0}/${status.t ?? 0}`],
  ];
}

function completionText(status: RekeyStatus, target: RekeyTarget): string {
  const label = target === 'recovery' ? 'Recovery Key' : 'Key';
  const keys = (status.keys_base64 ?? []).map((key, i) => `${label} ${i + 1}: ${key}`);
  const after = status.verification_nonce
    ? [
        `The new keys are not in force yet: submit ${status.t} of them with "svc operator rekey -verify${target === 'recovery' ? ' -target=recovery' : ''}"`,
        `(verification nonce ${status.verification_nonce}); until then the old keys stay valid.`,
      ]
    : [`Rekey complete: ${status.n} new shares with a threshold of ${status.t}. The old keys no longer work.`];
  const pgp = status.pgp_fingerprints ? ['The keys are encrypted to the PGP keys given, in order: base64 -d | gpg -d prints each.'] : [];
  return [...keys, '', `Operation nonce: ${status.nonce}`, '', ...after, ...pgp].join('\n');
}
