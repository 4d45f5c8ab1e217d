import { decodeOtpToken, type GeneratedToken, type GenerateRootStatus } from '@svc/sdk';
import { UsageError } from '../args';
import type { Command } from '../context';
import { println } from '../context';
import { keyValueTable, output, type Row } from '../format';
import { chosenAction, keyArgument } from './keys';
import { readPgpKeyFile } from './pgp-keys';

const ACTIONS = ['init', 'cancel', 'status', 'decode'] as const;

export const command: Command = {
  args: '[KEY]',
  summary: 'Generate a root token (or, with -dr-token, a DR operation token) from a threshold of unseal (or recovery) keys: -init, then one key per call, then -decode.',
  flags: {
    'dr-token': { kind: 'boolean', description: "generate a DR operation token on a DR secondary, with its primary's keys" },
    init: { kind: 'boolean', description: 'start an attempt; prints the one-time pad (OTP) needed to decode the token, or use -pgp-key' },
    'pgp-key': { kind: 'string', description: 'with -init: path of a PGP public key file to encrypt the token to instead' },
    cancel: { kind: 'boolean', description: 'cancel the attempt' },
    status: { kind: 'boolean', description: 'print the progress of the attempt' },
    decode: { kind: 'string', description: 'the encoded token to decode locally (with -otp)' },
    otp: { kind: 'string', description: 'with -decode: the OTP printed by -init' },
    nonce: { kind: 'string', description: 'nonce of the attempt (default: read from its status)' },
  },
  async run(ctx, { flags, positionals }) {
    const sys = ctx.client.sys;
    const made: GeneratedToken = flags['dr-token'] === true ? 'dr-operation' : 'root';
    const what = made === 'root' ? 'Root token generation' : 'DR operation token generation';
    switch (chosenAction(flags, positionals, ACTIONS)) {
      case 'decode': {
        if (typeof flags.otp !== 'string' || flags.otp === '') throw new UsageError('-decode needs -otp, the OTP printed when the attempt started');
        const token = decodeOtpToken(String(flags.decode), flags.otp);
        output(ctx, { token }, () => token);
        return 0;
      }
      case 'init': {
        const pgpPath = flags['pgp-key'];
        const status = await sys.generateRootStart(typeof pgpPath === 'string' ? await readPgpKeyFile(pgpPath) : undefined, made);
        output(ctx, status, () => keyValueTable(statusRows(status)));
        return 0;
      }
      case 'cancel':
        await sys.generateRootCancel(made);
        println(ctx.io.stdout, `Success! ${what} canceled (if it was started).`);
        return 0;
      case 'status': {
        const status = await sys.generateRootStatus(made);
        output(ctx, status, () => keyValueTable(statusRows(status)));
        return 0;
      }
      default: {
        const nonce = typeof flags.nonce === 'string' ? flags.nonce : (await sys.generateRootStatus(made)).nonce;
        if (!nonce) throw new UsageError(`no ${what.toLowerCase()} is in progress: start one with -init`);
        const key = await keyArgument(ctx, positionals, 'operator generate-root', 'Unseal Key (or Recovery Key)');
        const status = await sys.generateRootUpdate(key, nonce, made);
        output(ctx, status, () => keyValueTable(statusRows(status)));
        return 0;
      }
    }
  },
};

function statusRows(status: GenerateRootStatus): Row[] {
  return [
    ['Nonce', status.nonce || 'n/a'],
    ['Started', status.started],
    ['Progress', `${status.progress}/${status.required}`],
    ['Complete', status.complete],
    ...(status.otp ? [['OTP', status.otp] as Row] : []),
    ['OTP Length', status.otp_length],
    ...(status.pgp_fingerprint ? [['PGP Fingerprint', status.pgp_fingerprint] as Row] : []),
    ...(status.encoded_token ? [['Encoded Token', status.encoded_token] as Row] : []),
  ];
}
