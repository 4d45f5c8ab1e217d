import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_ADDRESS, SvcApiError, SvcClient, SvcConnectionError, type TlsOptions } from '@svc/sdk';
import { closest, describeFlags, FlagSpecs, parseArgs, UsageError, type ParsedArgs } from './args';
import type { CliIO, Command, LocalCommand, OutputFormat } from './context';
import { println } from './context';
import { loadYaml } from './format';
import { COMMANDS, type CommandEntry } from './registry';
import { storedToken } from './token-file';

export type { CliIO, InputStream, OutputStream } from './context';

const USAGE_EXIT_CODE = 1;
const API_ERROR_EXIT_CODE = 2;
const HELP_WORDS = new Set(['help', '-help', '--help', '-h']);
const FORMATS: readonly OutputFormat[] = ['table', 'json', 'yaml'];

/** The most words a command's name has (`operator raft snapshot save`). */
const MAX_COMMAND_WORDS = Math.max(...COMMANDS.map((entry) => entry.name.split(' ').length));

/** The commands `bin/svc.js` runs itself (they start servers); listed here for `svc -h`. */
const SERVER_COMMANDS = [
  ['server', 'Start a server (svc server -h for its flags).'],
  ['cluster', 'Start the distributed topology on this machine (svc cluster -h).'],
];

/** Flags every client command accepts; they override the SVC_* variables named in their help. */
const COMMON_FLAGS: FlagSpecs = {
  address: { kind: 'string', description: `address of the service (SVC_ADDR, default ${DEFAULT_ADDRESS})` },
  namespace: { kind: 'string', aliases: ['ns'], description: 'namespace of the request (SVC_NAMESPACE)' },
  format: { kind: 'string', description: 'output format: table, json or yaml (SVC_FORMAT)' },
  field: { kind: 'string', description: 'print only this field of the answer, without a trailing newline when piped' },
  'wrap-ttl': { kind: 'string', description: 'wrap the answer in a single-use token of this TTL, e.g. 5m (SVC_WRAP_TTL)' },
  'ca-cert': { kind: 'string', description: 'PEM file of CA certificates to verify the server with (SVC_CACERT)' },
  'ca-path': { kind: 'string', description: 'directory of PEM CA certificates to verify the server with (SVC_CAPATH)' },
  'client-cert': { kind: 'string', description: 'PEM client certificate for TLS authentication (SVC_CLIENT_CERT)' },
  'client-key': { kind: 'string', description: 'PEM private key of -client-cert (SVC_CLIENT_KEY)' },
  'tls-server-name': { kind: 'string', description: 'name to expect in the server certificate (SVC_TLS_SERVER_NAME)' },
  'tls-skip-verify': { kind: 'boolean', description: 'do not verify the server certificate: insecure (SVC_SKIP_VERIFY)' },
  help: { kind: 'boolean', aliases: ['h'], description: 'print this help' },
};

/** Runs a client command (`status`, `read PATH`, ...) and returns its exit code. */
export async function runClientCommand(argv: string[], io: CliIO): Promise<number> {
  if (argv.length === 1 && HELP_WORDS.has(argv[0])) {
    println(io.stdout, await usage(COMMANDS));
    return 0;
  }
  const entry = findCommand(argv);
  if (!entry) return unknownCommand(argv, io);
  const { command } = await entry.load();
  const flagSpecs = command.local ? { ...command.flags, help: COMMON_FLAGS.help } : { ...COMMON_FLAGS, ...command.flags };
  try {
    const args = parseArgs(argv.slice(entry.name.split(' ').length), flagSpecs);
    if (args.flags.help) {
      println(io.stdout, commandHelp(entry.name, command, flagSpecs));
      return 0;
    }
    if (command.local) return await command.run(io, args);
    const client = await clientFor(args, io);
    const field = args.flags.field === undefined ? undefined : String(args.flags.field);
    const format = outputFormat(args.flags.format ?? io.env.SVC_FORMAT);
    if (format === 'yaml') await loadYaml();
    return await command.run({ client, io, format, field }, args);
  } catch (err) {
    return reportError(io, entry.name, command, err);
  }
}

async function clientFor({ flags }: ParsedArgs, io: CliIO): Promise<SvcClient> {
  const setting = (flag: string, variable: string) => (flags[flag] as string | undefined) ?? (io.env[variable] || undefined);
  return new SvcClient({
    address: setting('address', 'SVC_ADDR') ?? DEFAULT_ADDRESS,
    token: io.env.SVC_TOKEN || (await storedToken(io.env)),
    namespace: setting('namespace', 'SVC_NAMESPACE'),
    wrapTtl: setting('wrap-ttl', 'SVC_WRAP_TTL'),
    maxRetries: io.env.SVC_MAX_RETRIES === undefined ? undefined : retries(io.env.SVC_MAX_RETRIES),
    tls: await tlsOptions(
      {
        caCert: setting('ca-cert', 'SVC_CACERT'),
        caPath: setting('ca-path', 'SVC_CAPATH'),
        clientCert: setting('client-cert', 'SVC_CLIENT_CERT'),
        clientKey: setting('client-key', 'SVC_CLIENT_KEY'),
        serverName: setting('tls-server-name', 'SVC_TLS_SERVER_NAME'),
      },
      flags['tls-skip-verify'] === true || ['1', 'true', 't'].includes((io.env.SVC_SKIP_VERIFY ?? '').toLowerCase()),
    ),
  });
}

function retries(value: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError('SVC_MAX_RETRIES must be a whole number');
  return Number(value);
}

interface TlsFiles {
  caCert?: string;
  caPath?: string;
  clientCert?: string;
  clientKey?: string;
  serverName?: string;
}

async function tlsOptions(files: TlsFiles, insecureSkipVerify: boolean): Promise<TlsOptions | undefined> {
  if (Boolean(files.clientCert) !== Boolean(files.clientKey)) throw new UsageError('-client-cert and -client-key go together');
  const ca = [
    ...(files.caCert ? [await readPem(files.caCert, 'ca-cert')] : []),
    ...(files.caPath ? await Promise.all((await readdir(files.caPath)).sort().map((name) => readPem(join(files.caPath!, name), 'ca-path'))) : []),
  ];
  const tls: TlsOptions = {
    ...(ca.length > 0 && { ca }),
    ...(files.clientCert && { cert: await readPem(files.clientCert, 'client-cert'), key: await readPem(files.clientKey!, 'client-key') }),
    ...(files.serverName && { serverName: files.serverName }),
    ...(insecureSkipVerify && { insecureSkipVerify }),
  };
  return Object.keys(tls).length > 0 ? tls : undefined;
}

async function readPem(path: string, flag: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read -${flag} file "${path}" (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
}

/** The longest command name that starts `argv`: "kv metadata get" before "kv". */
function findCommand(argv: string[]): CommandEntry | undefined {
  for (let words = MAX_COMMAND_WORDS; words > 0; words--) {
    const name = argv.slice(0, words).join(' ');
    const found = COMMANDS.find((entry) => entry.name === name);
    if (found) return found;
  }
  return undefined;
}

/** A group alone (`svc kv`) lists its commands; anything else is unknown, with the nearest name. */
async function unknownCommand(argv: string[], io: CliIO): Promise<number> {
  const words = argv.filter((arg) => !arg.startsWith('-'));
  const group = COMMANDS.filter((entry) => words.length > 0 && entry.name.startsWith(`${words.join(' ')} `));
  const asksHelp = argv.some((arg) => HELP_WORDS.has(arg));
  if (group.length > 0) {
    println(asksHelp ? io.stdout : io.stderr, await usage(group));
    return asksHelp ? 0 : USAGE_EXIT_CODE;
  }
  if (argv.length > 0) {
    const names = [...COMMANDS.map((entry) => entry.name), ...SERVER_COMMANDS.map(([name]) => name)];
    // The command is its first words; the rest are its arguments.
    const near = Array.from({ length: MAX_COMMAND_WORDS }, (_, i) => MAX_COMMAND_WORDS - i)
      .map((count) => closest(words.slice(0, count).join(' '), names))
      .find(Boolean);
    println(io.stderr, `Unknown command: ${argv.join(' ')}${near ? ` (did you mean "svc ${near}"?)` : ''}\n`);
  }
  println(io.stderr, await usage(COMMANDS));
  return USAGE_EXIT_CODE;
}

function outputFormat(value: unknown): OutputFormat {
  if (value === undefined || value === '') return 'table';
  if (FORMATS.includes(value as OutputFormat)) return value as OutputFormat;
  throw new UsageError(`-format must be ${FORMATS.slice(0, -1).join(', ')} or ${FORMATS[FORMATS.length - 1]}`);
}

function reportError(io: CliIO, name: string, command: Command | LocalCommand, err: unknown): number {
  const apiErrorExitCode = (command.local ? undefined : command.apiErrorExitCode) ?? API_ERROR_EXIT_CODE;
  if (err instanceof SvcApiError) {
    println(io.stderr, `Error: ${err.method} ${err.path} answered status ${err.status}`);
    for (const message of err.errors) println(io.stderr, `* ${message}`);
    if (err.status === 403 && !io.env.SVC_TOKEN) {
      println(io.stderr, '\nHint: no token was sent, or the stored one (~/.svc-token) is refused: set SVC_TOKEN or run "svc login".');
    }
    return apiErrorExitCode;
  }
  println(io.stderr, `Error: ${err instanceof Error ? err.message : String(err)}`);
  if (err instanceof UsageError) {
    println(io.stderr, `Run "svc ${name} -help" for usage.`);
    return USAGE_EXIT_CODE;
  }
  return err instanceof SvcConnectionError ? apiErrorExitCode : USAGE_EXIT_CODE;
}

async function usage(entries: CommandEntry[]): Promise<string> {
  const commands = await Promise.all(entries.map(async (entry) => ({ name: entry.name, command: (await entry.load()).command })));
  const lines = [
    ...commands.map(({ name, command }) => [`${name} ${command.args}`.trimEnd(), command.summary]),
    ...(entries === COMMANDS ? SERVER_COMMANDS : []),
  ];
  const width = Math.max(...lines.map(([left]) => left.length));
  return [
    'Usage: svc <command> [flags] [args]',
    '',
    'Commands:',
    ...lines.map(([left, summary]) => `  ${left.padEnd(width)}  ${summary}`),
    '',
    'Common flags:',
    describeFlags(COMMON_FLAGS),
    '',
    'Environment: SVC_ADDR, SVC_TOKEN (else the token `svc login` stored in ~/.svc-token), SVC_NAMESPACE, SVC_FORMAT,',
    'SVC_WRAP_TTL, SVC_CACERT, SVC_CAPATH, SVC_CLIENT_CERT, SVC_CLIENT_KEY, SVC_TLS_SERVER_NAME, SVC_SKIP_VERIFY, SVC_MAX_RETRIES',
  ].join('\n');
}

function commandHelp(name: string, command: Command | LocalCommand, flags: FlagSpecs): string {
  return [`Usage: svc ${name} [flags] ${command.args}`.trimEnd(), '', command.summary, '', 'Flags:', describeFlags(flags)].join('\n');
}
