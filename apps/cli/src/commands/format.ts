import type { Envelope } from '@svc/sdk';
import { UsageError } from './args';
import type { CommandContext } from './context';
import { println } from './context';

export type Row = [key: string, value: unknown];

let yamlStringify: ((value: unknown) => string) | undefined;

/**
 * Loads the YAML package, before a command runs with -format=yaml: only that format needs it, and
 * it takes longer to load than the rest of a client command.
 */
export async function loadYaml(): Promise<void> {
  yamlStringify ??= (await import('yaml')).stringify;
}

function toYaml(value: unknown): string {
  if (!yamlStringify) throw new Error('YAML output before loadYaml()');
  return yamlStringify(value);
}

/** Vault-style two-column table: "Key  Value", dashes, one row per entry. */
export function keyValueTable(rows: Row[]): string {
  return columns(['Key', 'Value'], rows.map(([key, value]) => [key, formatValue(value)]));
}

/** Columns under a header and a line of dashes, four spaces apart, as Vault's list tables. */
export function columns(header: string[], rows: string[][]): string {
  const all = [header, header.map((title) => '-'.repeat(title.length)), ...rows];
  const widths = header.map((_, column) => Math.max(...all.map((row) => (row[column] ?? '').length)));
  return all.map((row) => row.map((cell, column) => (cell ?? '').padEnd(widths[column])).join('    ').trimEnd()).join('\n');
}

export function formatValue(value: unknown): string {
  if (typeof value === 'string') return value === '' ? 'n/a' : value;
  if (value === null || value === undefined) return 'n/a';
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return `[${value.join(' ')}]`;
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** Seconds as Go prints a duration, without zero trailing units: 768h, 1h30m, 45s; 0 is ∞ for a token. */
export function humanDuration(seconds: number): string {
  if (seconds === 0) return '0s';
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = seconds % 60;
  return `${hours ? `${hours}h` : ''}${minutes ? `${minutes}m` : ''}${rest ? `${rest}s` : ''}`;
}

/**
 * Prints `value` in the chosen format: JSON, YAML, the table built by `table`, or with -field the
 * named field of `value` alone.
 */
export function output(ctx: CommandContext, value: unknown, table: () => string): void {
  if (ctx.field !== undefined) return printField(ctx, value as Record<string, unknown>, ctx.field);
  if (ctx.format === 'json') return println(ctx.io.stdout, JSON.stringify(value, null, 2));
  if (ctx.format === 'yaml') return void ctx.io.stdout.write(toYaml(value));
  println(ctx.io.stdout, table());
}

/**
 * A field's value as is (objects as JSON), without a newline when stdout is not a terminal, so
 * `$(svc read -field=password ...)` holds the value exactly.
 */
function printField(ctx: CommandContext, fields: Record<string, unknown> | null, name: string): void {
  if (!fields || !(name in fields)) throw new UsageError(`field "${name}" not present in the answer`);
  const value = fields[name];
  const text = typeof value === 'string' ? value : ctx.format === 'yaml' ? toYaml(value) : JSON.stringify(value);
  ctx.io.stdout.write(ctx.io.stdout.isTTY ? `${text}\n` : text);
}

/** The rows of a secret as Vault's table: lease, auth, wrapping token, then its data sorted by key. */
export function secretRows(secret: Envelope): Row[] {
  const rows: Row[] = [];
  if (secret.lease_duration > 0) {
    if (secret.lease_id) {
      rows.push(['lease_id', secret.lease_id], ['lease_duration', humanDuration(secret.lease_duration)], ['lease_renewable', secret.renewable]);
    } else {
      rows.push(['refresh_interval', humanDuration(secret.lease_duration)]);
    }
  }
  rows.push(...authRows(secret.auth), ...wrapRows(secret.wrap_info));
  rows.push(...Object.entries(secret.data ?? {}).sort(([a], [b]) => a.localeCompare(b)));
  return rows;
}

/** The fields -field= can name in a secret: its auth and wrapping rows (raw values), then its data. */
function fieldValues(secret: Envelope): Record<string, unknown> {
  const auth = secret.auth;
  const rows = [...authRows(auth), ...wrapRows(secret.wrap_info)].map(([key, value]): Row => [key.replace(/:$/, ''), value]);
  return { ...Object.fromEntries(rows), ...(auth ? { token_duration: auth.lease_duration } : {}), ...(secret.data ?? {}) };
}

export function authRows(auth: Envelope['auth']): Row[] {
  if (!auth) return [];
  return [
    ['token', auth.client_token],
    ['token_accessor', auth.accessor],
    ['token_duration', auth.lease_duration === 0 ? '∞' : humanDuration(auth.lease_duration)],
    ['token_renewable', auth.renewable],
    ['token_policies', auth.token_policies],
    ['identity_policies', auth.identity_policies ?? []],
    ['policies', auth.policies],
    ...Object.entries(auth.metadata ?? {})
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, value]): Row => [`token_meta_${key}`, value]),
  ];
}

function wrapRows(wrap: Envelope['wrap_info']): Row[] {
  if (!wrap) return [];
  return [
    ['wrapping_token:', wrap.token],
    ['wrapping_accessor:', wrap.accessor],
    ['wrapping_token_ttl:', humanDuration(wrap.ttl)],
    ['wrapping_token_creation_time:', wrap.creation_time],
    ['wrapping_token_creation_path:', wrap.creation_path],
    ...(wrap.wrapped_accessor ? [['wrapped_accessor:', wrap.wrapped_accessor] as Row] : []),
  ];
}

/**
 * Prints a secret as Vault does: the envelope in JSON or YAML, a field with -field, else its table;
 * when the table would be empty, `empty` (e.g. "Success! Data written to: PATH").
 */
export function printSecret(ctx: CommandContext, secret: Envelope | null, empty: string): void {
  printWarnings(ctx, secret);
  if (ctx.field !== undefined) return printField(ctx, secret && fieldValues(secret), ctx.field);
  if (!secret) return println(ctx.io.stdout, empty);
  const rows = secretRows(secret);
  if (ctx.format === 'table' && rows.length === 0) return println(ctx.io.stdout, empty);
  output(ctx, secret, () => keyValueTable(rows));
}

/** Warnings go to stderr in table format; JSON and YAML output carry them in the envelope. */
export function printWarnings(ctx: CommandContext, secret: Envelope | null): void {
  if (ctx.format !== 'table' || !secret?.warnings?.length) return;
  println(ctx.io.stderr, 'WARNING! The service returned these warnings:');
  for (const warning of secret.warnings) println(ctx.io.stderr, `* ${warning}`);
  println(ctx.io.stderr);
}
