import { SvcApiError, SvcClient, SvcConnectionError } from '@svc/sdk';
import { describeFlags, FlagSpecs, parseArgs, UsageError } from './args';
import type { CliIO, Command, OutputFormat } from './context';
import { println } from './context';
import { operatorGenerateRootCommand } from './generate-root';
import { operatorInitCommand, operatorSealCommand, operatorUnsealCommand } from './operator';
import { operatorRekeyCommand } from './rekey';
import { deleteCommand, listCommand, readCommand } from './secrets';
import { statusCommand } from './status';
import { writeCommand } from './write';
import { loginCommand } from './login';
import { authDisableCommand, authEnableCommand, authListCommand } from './auth';
import { PLUGIN_COMMANDS } from './plugin';
import { storedToken } from './token-file';

export type { CliIO, InputStream, OutputStream } from './context';

export const DEFAULT_ADDRESS = 'http://127.0.0.1:8200';
const USAGE_EXIT_CODE = 1;
const API_ERROR_EXIT_CODE = 2;
const HELP_WORDS = new Set(['help', '-help', '--help', '-h']);

const COMMANDS: Command[] = [
  statusCommand,
  operatorInitCommand,
  operatorUnsealCommand,
  operatorSealCommand,
  operatorRekeyCommand,
  operatorGenerateRootCommand,
  readCommand,
  writeCommand,
  listCommand,
  deleteCommand,
  loginCommand,
  authEnableCommand,
  authDisableCommand,
  authListCommand,
  ...PLUGIN_COMMANDS,
];

/** Flags every client command accepts; they override SVC_ADDR, SVC_NAMESPACE and SVC_FORMAT. */
const COMMON_FLAGS: FlagSpecs = {
  address: { kind: 'string', description: `address of the service (SVC_ADDR, default ${DEFAULT_ADDRESS})` },
  namespace: { kind: 'string', aliases: ['ns'], description: 'namespace of the request (SVC_NAMESPACE)' },
  format: { kind: 'string', description: 'output format: table or json (SVC_FORMAT)' },
  help: { kind: 'boolean', aliases: ['h'], description: 'print this help' },
};

/** Runs a client command (`status`, `read PATH`, ...) and returns its exit code. */
export async function runClientCommand(argv: string[], io: CliIO): Promise<number> {
  if (argv.length === 1 && HELP_WORDS.has(argv[0])) {
    println(io.stdout, usage());
    return 0;
  }
  const command = findCommand(argv);
  if (!command) {
    if (argv.length > 0) println(io.stderr, `Unknown command: ${argv.join(' ')}\n`);
    println(io.stderr, usage());
    return USAGE_EXIT_CODE;
  }
  const flagSpecs = { ...COMMON_FLAGS, ...command.flags };
  try {
    const args = parseArgs(argv.slice(command.name.split(' ').length), flagSpecs);
    if (args.flags.help) {
      println(io.stdout, commandHelp(command, flagSpecs));
      return 0;
    }
    const format = outputFormat(args.flags.format ?? io.env.SVC_FORMAT);
    const client = new SvcClient({
      address: String(args.flags.address ?? io.env.SVC_ADDR ?? DEFAULT_ADDRESS),
      token: io.env.SVC_TOKEN || (await storedToken(io.env)),
      namespace: String(args.flags.namespace ?? io.env.SVC_NAMESPACE ?? '') || undefined,
    });
    return await command.run({ client, io, format }, args);
  } catch (err) {
    return reportError(io, command, err);
  }
}

function findCommand(argv: string[]): Command | undefined {
  // The longest name that the words start with (`plugin runtime list` before `plugin list`).
  for (const words of [3, 2, 1]) {
    const name = argv.slice(0, words).join(' ');
    const command = argv.length >= words ? COMMANDS.find((candidate) => candidate.name === name) : undefined;
    if (command) return command;
  }
  return undefined;
}

function outputFormat(value: unknown): OutputFormat {
  if (value === undefined || value === '' || value === 'table') return 'table';
  if (value === 'json') return 'json';
  throw new UsageError('-format must be table or json');
}

function reportError(io: CliIO, command: Command, err: unknown): number {
  if (err instanceof SvcApiError) {
    println(io.stderr, `Error: ${err.method} ${err.path} answered status ${err.status}`);
    for (const message of err.errors) println(io.stderr, `* ${message}`);
    return command.apiErrorExitCode ?? API_ERROR_EXIT_CODE;
  }
  println(io.stderr, `Error: ${err instanceof Error ? err.message : String(err)}`);
  if (err instanceof UsageError) {
    println(io.stderr, `Run "svc ${command.name} -help" for usage.`);
    return USAGE_EXIT_CODE;
  }
  return err instanceof SvcConnectionError ? (command.apiErrorExitCode ?? API_ERROR_EXIT_CODE) : USAGE_EXIT_CODE;
}

function usage(): string {
  const width = Math.max(...COMMANDS.map((command) => `${command.name} ${command.args}`.length));
  const lines = COMMANDS.map((command) => `  ${`${command.name} ${command.args}`.padEnd(width)}  ${command.summary}`);
  return [
    'Usage: svc <command> [flags] [args]',
    '',
    'Commands:',
    ...lines,
    '',
    'Common flags:',
    describeFlags(COMMON_FLAGS),
    '',
    'Environment: SVC_ADDR, SVC_TOKEN (else the token `svc login` stored in ~/.svc-token), SVC_NAMESPACE, SVC_FORMAT',
  ].join('\n');
}

function commandHelp(command: Command, flags: FlagSpecs): string {
  return [`Usage: svc ${command.name} [flags] ${command.args}`.trimEnd(), '', command.summary, '', 'Flags:', describeFlags(flags)].join(
    '\n',
  );
}
