import type { Envelope } from '@svc/sdk';
import type { CommandContext } from './context';
import { println } from './context';

export type Row = [key: string, value: unknown];

/** Vault-style two-column table: "Key  Value", dashes, one row per entry. */
export function keyValueTable(rows: Row[]): string {
  const all: [string, string][] = [['Key', 'Value'], ['---', '-----'], ...rows.map(([key, value]): [string, string] => [key, formatValue(value)])];
  const width = Math.max(...all.map(([key]) => key.length));
  return all.map(([key, value]) => `${key.padEnd(width)}    ${value}`.trimEnd()).join('\n');
}

/** Columns under a header row and a row of dashes, padded to the widest cell (`svc auth list`, `svc plugin list`). */
export function columnsTable(header: string[], rows: string[][]): string {
  const all = [header, header.map((title) => '-'.repeat(title.length)), ...rows];
  const widths = header.map((_, column) => Math.max(...all.map((row) => row[column].length)));
  return all.map((row) => row.map((cell, column) => cell.padEnd(widths[column])).join('    ').trimEnd()).join('\n');
}

export function formatValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return 'n/a';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** Prints `value` as JSON, or the table built by `table` in table format. */
export function output(ctx: CommandContext, value: unknown, table: () => string): void {
  println(ctx.io.stdout, ctx.format === 'json' ? JSON.stringify(value, null, 2) : table());
}

/** The rows of a secret: lease fields when it has a lease, then its data sorted by key. */
export function secretRows(secret: Envelope): Row[] {
  const lease: Row[] = secret.lease_id
    ? [
        ['lease_id', secret.lease_id],
        ['lease_duration', `${secret.lease_duration}s`],
        ['lease_renewable', secret.renewable],
      ]
    : [];
  const data = Object.entries(secret.data ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return [...lease, ...data];
}

/** Warnings go to stderr in table format; JSON output carries them in the envelope. */
export function printWarnings(ctx: CommandContext, secret: Envelope | null): void {
  if (ctx.format === 'json' || !secret?.warnings?.length) return;
  println(ctx.io.stderr, 'WARNING! The service returned these warnings:');
  for (const warning of secret.warnings) println(ctx.io.stderr, `* ${warning}`);
  println(ctx.io.stderr);
}
