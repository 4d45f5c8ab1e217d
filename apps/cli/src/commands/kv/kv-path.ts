import type { Envelope } from '@svc/sdk';
import { UsageError, type FlagSpecs, type ParsedArgs } from '../args';
import type { CommandContext } from '../context';
import { println } from '../context';
import { keyValueTable, output, printWarnings, type Row } from '../format';

export const MOUNT_FLAG: FlagSpecs = {
  mount: { kind: 'string', description: 'mount of the kv engine; the path is then relative to it (default: the first part of the path)' },
};

export const VERSIONS_FLAG: FlagSpecs = {
  versions: { kind: 'list', description: 'versions, comma-separated; may be repeated' },
};

/** What `svc kv` works on: the kv mount, its version, and the secret's path inside it. */
export interface KvPath {
  mount: string;
  version: 1 | 2;
  path: string;
}

/**
 * The mount and kv version of a secret, asked of `sys/internal/ui/mounts` (as Vault's CLI does), so
 * `svc kv get secret/app` reads `secret/data/app` on version 2 and `secret/app` on version 1.
 */
export async function kvPath(ctx: CommandContext, flags: ParsedArgs['flags'], given: string): Promise<KvPath> {
  const mountFlag = flags.mount === undefined ? undefined : String(flags.mount).replace(/^\/+|\/+$/g, '');
  const full = (mountFlag ? `${mountFlag}/${given}` : given).replace(/^\/+/, '');
  // Never wrapped (-wrap-ttl is for the answer the user asked for, not this question).
  const mount = await ctx.client.withOptions({ wrapTtl: undefined }).read(`sys/internal/ui/mounts/${mountFlag ?? full}`);
  const info = (mount?.data ?? {}) as { type?: string; path?: string; options?: Record<string, string> | null };
  if (!info.path || !['kv', 'generic'].includes(info.type ?? '')) throw new UsageError(`no kv secrets engine is mounted at "${full}"`);
  return { mount: info.path.replace(/\/$/, ''), version: info.options?.version === '2' ? 2 : 1, path: full.slice(info.path.length).replace(/^\/+/, '') };
}

/** `MOUNT/PART/PATH` of version 2 (`data`, `metadata`, `delete`, ...), `MOUNT/PATH` of version 1. */
export function apiPath(kv: KvPath, part: string): string {
  return kv.version === 2 ? `${kv.mount}/${part}/${kv.path}` : `${kv.mount}/${kv.path}`;
}

export function requireV2(kv: KvPath, command: string): void {
  if (kv.version !== 2) throw new UsageError(`${command} needs a kv version 2 engine; ${kv.mount}/ is version 1`);
}

/** The one PATH argument of a kv command, resolved. */
export async function onlyKvPath(ctx: CommandContext, { flags, positionals }: ParsedArgs, command: string): Promise<KvPath> {
  if (positionals.length !== 1) throw new UsageError(`${command} takes exactly one PATH argument (got ${positionals.length})`);
  return kvPath(ctx, flags, positionals[0]);
}

/** -versions as the integers the API takes; required for the commands that act on versions. */
export function versionsFlag(flags: ParsedArgs['flags'], command: string): number[] {
  const versions = (flags.versions as string[] | undefined) ?? [];
  if (versions.length === 0) throw new UsageError(`${command} needs -versions`);
  return versions.map((version) => {
    if (!/^[1-9]\d*$/.test(version)) throw new UsageError(`-versions: "${version}" is not a version number`);
    return Number(version);
  });
}

/** Vault's sections of a kv answer: "== Secret Path ==", the metadata and the data, each titled. */
export function printKvSecret(ctx: CommandContext, kv: KvPath, secret: Envelope, data: Record<string, unknown> | null | undefined, metadata?: Record<string, unknown>): void {
  printWarnings(ctx, secret);
  if (ctx.field !== undefined) return output(ctx, data ?? {}, () => '');
  output(ctx, secret, () =>
    [
      ...(kv.version === 2 ? [section('Secret Path', apiPath(kv, 'data'))] : []),
      ...(metadata ? [section('Metadata', keyValueTable(sortedRows(metadata)))] : []),
      ...(data && Object.keys(data).length > 0 ? [section('Data', keyValueTable(sortedRows(data)))] : []),
    ].join('\n\n'),
  );
}

export function sortedRows(values: Record<string, unknown>): Row[] {
  return Object.entries(values).sort(([a], [b]) => a.localeCompare(b));
}

export function section(title: string, body: string): string {
  return `== ${title} ==\n${body}`;
}

/** After a version 2 write: the path and the new version's metadata, as Vault prints them. */
export function printKvWrite(ctx: CommandContext, kv: KvPath, secret: Envelope | null): void {
  if (kv.version === 1 || !secret) {
    if (ctx.field === undefined) println(ctx.io.stdout, `Success! Data written to: ${apiPath(kv, 'data')}`);
    return;
  }
  printWarnings(ctx, secret);
  output(ctx, ctx.field === undefined ? secret : (secret.data ?? {}), () =>
    [section('Secret Path', apiPath(kv, 'data')), section('Metadata', keyValueTable(sortedRows(secret.data ?? {})))].join('\n\n'),
  );
}
