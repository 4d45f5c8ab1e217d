import { distance as editDistance } from 'fastest-levenshtein';
import yargsParser from 'yargs-parser';

/**
 * Vault-style command-line flags (`-flag=value`, `-flag value`, `--flag`, boolean `-flag`), parsed
 * by yargs-parser with short-option groups off, so `-key-shares` is one flag rather than a cluster
 * of one-letter flags. Flags may appear anywhere; `--` ends them; `-` alone is an argument (stdin).
 */

/** `list`: may be repeated, and each value may hold a comma-separated list (`-policy=a,b -policy=c`). */
export type FlagKind = 'string' | 'boolean' | 'int' | 'list';

export interface FlagSpec {
  kind: FlagKind;
  aliases?: string[];
  description: string;
}

export type FlagSpecs = Record<string, FlagSpec>;

export type FlagValue = string | boolean | number | string[];

export interface ParsedArgs {
  flags: Record<string, FlagValue>;
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

const PARSER_CONFIGURATION: Partial<yargsParser.Configuration> = {
  'short-option-groups': false,
  'camel-case-expansion': false,
  'dot-notation': false,
  'parse-numbers': false,
  'parse-positional-numbers': false,
  'boolean-negation': false,
  'duplicate-arguments-array': true,
  'flatten-duplicate-arrays': true,
  'greedy-arrays': false,
  'strip-aliased': true,
  'populate--': true,
  'unknown-options-as-args': false,
};

export function parseArgs(argv: readonly string[], specs: FlagSpecs): ParsedArgs {
  const names = Object.keys(specs);
  const ofKind = (...kinds: FlagKind[]) => names.filter((name) => kinds.includes(specs[name].kind));
  const parsed = yargsParser([...argv], {
    configuration: PARSER_CONFIGURATION,
    string: ofKind('string', 'int', 'list'),
    boolean: ofKind('boolean'),
    alias: Object.fromEntries(names.filter((name) => specs[name].aliases).map((name) => [name, specs[name].aliases!])),
  });
  const { _: positionals, '--': rest, ...given } = parsed as yargsParser.Arguments & { '--'?: (string | number)[] };
  const inline = inlineValues(argv);
  const flags: Record<string, FlagValue> = {};
  for (const [name, raw] of Object.entries(given)) {
    const spec = specs[name];
    if (!spec) throw new UsageError(`unknown flag -${name}${suggestion(name, names)}`);
    const forms = [name, ...(spec.aliases ?? [])];
    const written = forms.flatMap((form) => inline.get(form) ?? []);
    flags[name] = flagValue(name, spec.kind, (Array.isArray(raw) ? raw : [raw]).map(String), written);
  }
  return { flags, positionals: [...positionals, ...(rest ?? [])].map(String) };
}

/**
 * The values written inline (`-name=value`) per flag name, before `--`: yargs reads `-flag=yes` of a
 * boolean as false and a value flag with no value as "", which are refused here instead.
 */
function inlineValues(argv: readonly string[]): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const arg of argv) {
    if (arg === '--') break;
    const match = /^--?([^=-][^=]*)=(.*)$/s.exec(arg);
    if (match) found.set(match[1], [...(found.get(match[1]) ?? []), match[2]]);
  }
  return found;
}

function flagValue(name: string, kind: FlagKind, values: string[], written: string[]): FlagValue {
  if (kind === 'boolean') {
    const last = written[written.length - 1];
    return last === undefined ? values[values.length - 1] === 'true' : parseBoolean(name, last);
  }
  const value = values[values.length - 1];
  if (value === '' && !written.includes('')) throw new UsageError(`flag -${name} needs a value`);
  if (kind === 'list') return values.flatMap((item) => item.split(',')).map((item) => item.trim()).filter(Boolean);
  return kind === 'int' ? parseInteger(name, value) : value;
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

/** ` (did you mean -NAME?)` when a known name is close to `given`, else nothing. */
export function suggestion(given: string, known: readonly string[], prefix = '-'): string {
  const close = closest(given, known);
  return close === undefined ? '' : ` (did you mean ${prefix}${close}?)`;
}

/** The known name nearest to `given` within a third of its length in edits, if any. */
export function closest(given: string, known: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = editDistance(given, name);
    if (distance <= Math.max(1, Math.floor(given.length / 3)) && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
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
