import { parse } from 'js-hcl-parser';
import { ConfigError } from './errors';

// The parser returns its error instead of JSON: "unable to parse JSON: At 2:4: <summary>".
const FAILURE = /^unable to \w+ JSON: (?:At (\d+):(\d+): )?(.*)$/s;

// Summaries that quote the source text, which may be a secret (a password written without its
// quotes, or a value missing its "="), reworded without the quote.
const QUOTING_SUMMARIES: Array<[RegExp, string]> = [
  [/^key '.*' expected start of object \('\{'\) or assignment \('='\)$/s, "expected '{' or '=' after the key"],
  [/^Unknown token: \S+ (\w+) .*$/s, 'unexpected $1'],
  [/^strconv\.\w+: parsing ".*": (.*)$/s, 'invalid number ($1)'],
];

/**
 * Parses HCL as Vault reads it (HashiCorp HCL v1; JSON text is accepted too). Every object and
 * block body comes back wrapped in a list: `listener "tcp" { a = 1 }` gives
 * `{ listener: [{ tcp: [{ a: 1 }] }] }` (see `blocksOf` and `objectsOf`).
 * Throws ConfigError naming `sourceName` and the line and column of a syntax error.
 */
export function parseHcl(text: string, sourceName: string): unknown {
  const output = parse(text);
  const failure = FAILURE.exec(output);
  if (!failure) return JSON.parse(output) as unknown;
  const [, line, column, summary] = failure;
  const where = line !== undefined ? `line ${line} column ${column}: ` : '';
  throw new ConfigError(`${sourceName}: invalid HCL: ${where}${withoutSourceText(summary)}`);
}

function withoutSourceText(summary: string): string {
  const rule = QUOTING_SUMMARIES.find(([pattern]) => pattern.test(summary));
  return rule ? summary.replace(rule[0], rule[1]) : summary;
}
