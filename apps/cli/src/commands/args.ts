/**
 * Vault-style command-line flags: `-flag=value`, `-flag value`, `--flag`, boolean `-flag`.
 * Written here rather than using util.parseArgs or minimist because those read `-key-shares`
 * as a cluster of one-letter flags. Flags may appear anywhere; `--` ends them; `-` alone is an
 * argument (stdin).
 */

export type FlagKind = 'string' | 'boolean' | 'int';

export interface FlagSpec {
  kind: FlagKind;
  aliases?: string[];
  description: string;
}

export type FlagSpecs = Record<string, FlagSpec>;

export interface ParsedArgs {
  flags: Record<string, string | boolean | number>;
  positionals: string[];
}

/** Wrong use of the command line; exit code 1. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

const TRUE_WORDS = new Set(['true', '1', 't']);
const FALSE_WORDS = new Set(['false', '0', 'f']);

export function parseArgs(argv: readonly string[], specs: FlagSpecs): ParsedArgs {
  const byName = flagIndex(specs);
  const parsed: ParsedArgs = { flags: {}, positionals: [] };
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index];
    if (arg === '--') {
      parsed.positionals.push(...argv.slice(index + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      parsed.positionals.push(arg);
      continue;
    }
    const body = arg.replace(/^--?/, '');
    const equals = body.indexOf('=');
    const name = equals < 0 ? body : body.slice(0, equals);
    const inline = equals < 0 ? undefined : body.slice(equals + 1);
    const canonical = byName.get(name);
    if (!canonical) throw new UsageError(`unknown flag -${name}`);
    const spec = specs[canonical];
    if (spec.kind === 'boolean') {
      parsed.flags[canonical] = inline === undefined ? true : parseBoolean(name, inline);
      continue;
    }
    const value = inline ?? argv[++index];
    if (value === undefined) throw new UsageError(`flag -${name} needs a value`);
    parsed.flags[canonical] = spec.kind === 'int' ? parseInteger(name, value) : value;
  }
  return parsed;
}

/** Usage lines for a set of flags. */
export function describeFlags(specs: FlagSpecs): string {
  return Object.entries(specs)
    .map(([name, spec]) => {
      const names = [name, ...(spec.aliases ?? [])].map((flag) => `-${flag}`).join(', ');
      const value = spec.kind === 'boolean' ? '' : spec.kind === 'int' ? '=<int>' : '=<string>';
      return `  ${`${names}${value}`.padEnd(28)} ${spec.description}`;
    })
    .join('\n');
}

function flagIndex(specs: FlagSpecs): Map<string, string> {
  const index = new Map<string, string>();
  for (const [name, spec] of Object.entries(specs)) {
    for (const alias of [name, ...(spec.aliases ?? [])]) index.set(alias, name);
  }
  return index;
}

function parseBoolean(name: string, value: string): boolean {
  const word = value.toLowerCase();
  if (TRUE_WORDS.has(word)) return true;
  if (FALSE_WORDS.has(word)) return false;
  throw new UsageError(`flag -${name} must be true or false`);
}

function parseInteger(name: string, value: string): number {
  if (!/^-?\d+$/.test(value.trim())) throw new UsageError(`flag -${name} must be an integer`);
  return Number(value);
}
