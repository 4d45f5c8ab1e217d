import type { MountInfo } from '@svc/sdk';
import { UsageError, type FlagSpecs, type ParsedArgs } from './args';
import type { Command } from './context';
import { println } from './context';
import { columns, formatValue, humanDuration, output } from './format';
import { exactly, onlyPath } from './paths';
import { keyValuePairs } from './data';

/** Secrets engines (`sys/mounts`, paths as given) or auth methods (`sys/auth`, paths below auth/). */
export type MountKind = 'secrets' | 'auth';

const NOUN: Record<MountKind, string> = { secrets: 'secrets engine', auth: 'auth method' };
const TABLE: Record<MountKind, string> = { secrets: 'sys/mounts', auth: 'sys/auth' };

const TUNE_FLAGS: FlagSpecs = {
  description: { kind: 'string', description: 'human-friendly description of the mount' },
  'default-lease-ttl': { kind: 'string', description: 'default lease TTL of the mount, e.g. 1h' },
  'max-lease-ttl': { kind: 'string', description: 'maximum lease TTL of the mount, e.g. 24h' },
  options: { kind: 'list', description: 'K=V engine options; may be repeated' },
};

/** The mount path without slashes and, for an auth method, without its auth/ prefix. */
function mountPath(kind: MountKind, path: string): string {
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  const inTable = kind === 'auth' ? trimmed.replace(/^auth\//, '') : trimmed;
  if (inTable === '') throw new UsageError('the path must not be empty');
  return inTable;
}

function tuneBody(flags: ParsedArgs['flags']): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (flags.description !== undefined) body.description = flags.description;
  if (flags['default-lease-ttl'] !== undefined) body.default_lease_ttl = flags['default-lease-ttl'];
  if (flags['max-lease-ttl'] !== undefined) body.max_lease_ttl = flags['max-lease-ttl'];
  if (flags.options !== undefined) body.options = keyValuePairs(flags.options as string[], 'options');
  return body;
}

export function enableCommand(kind: MountKind): Command {
  return {
    args: 'TYPE',
    summary: `Enable a${kind === 'auth' ? 'n' : ''} ${NOUN[kind]} of TYPE at PATH (default: the type).`,
    flags: {
      path: { kind: 'string', description: `where to mount it${kind === 'auth' ? ', below auth/' : ''} (default: the type)` },
      ...TUNE_FLAGS,
      local: { kind: 'boolean', description: 'local to this cluster: not replicated' },
      'seal-wrap': { kind: 'boolean', description: 'seal-wrap the mount' },
      ...(kind === 'secrets' && { version: { kind: 'int', description: 'engine version (kv: 1 or 2); the same as -options=version=N' } }),
      'plugin-version': { kind: 'string', description: 'plugin version to run' },
    },
    async run(ctx, { flags, positionals }) {
      const [type] = exactly(`${kind} enable`, positionals, ['TYPE']);
      const path = mountPath(kind, String(flags.path ?? type));
      const { description, default_lease_ttl, max_lease_ttl, options: given } = tuneBody(flags);
      const config = { ...(default_lease_ttl !== undefined && { default_lease_ttl }), ...(max_lease_ttl !== undefined && { max_lease_ttl }) };
      const opts = { ...(given as Record<string, string> | undefined), ...(flags.version !== undefined && { version: String(flags.version) }) };
      await ctx.client.write(`${TABLE[kind]}/${path}`, {
        type,
        description: description ?? '',
        ...(Object.keys(config).length > 0 && { config }),
        ...(Object.keys(opts).length > 0 && { options: opts }),
        ...(flags.local === true && { local: true }),
        ...(flags['seal-wrap'] === true && { seal_wrap: true }),
        ...(flags['plugin-version'] !== undefined && { plugin_version: flags['plugin-version'] }),
      });
      println(ctx.io.stdout, kind === 'auth' ? `Success! Enabled ${type} auth method at: ${path}/` : `Success! Enabled the ${type} secrets engine at: ${path}/`);
      return 0;
    },
  };
}

export function disableCommand(kind: MountKind): Command {
  return {
    args: 'PATH',
    summary: `Disable the ${NOUN[kind]} at PATH; ${kind === 'auth' ? 'the tokens it issued are revoked' : 'its data and leases are removed'}.`,
    flags: {},
    async run(ctx, { positionals }) {
      const path = mountPath(kind, onlyPath(`${kind} disable`, positionals));
      await ctx.client.delete(`${TABLE[kind]}/${path}`);
      println(ctx.io.stdout, `Success! Disabled the ${NOUN[kind]} (if it existed) at: ${path}/`);
      return 0;
    },
  };
}

export function listCommand(kind: MountKind): Command {
  return {
    args: '',
    summary: `List the enabled ${NOUN[kind]}s.`,
    flags: { detailed: { kind: 'boolean', description: 'also show TTLs, options, local and seal wrap' } },
    async run(ctx, { flags }) {
      const mounts = ((await ctx.client.read(TABLE[kind]))?.data ?? {}) as Record<string, MountInfo>;
      const sorted = Object.entries(mounts).sort(([a], [b]) => a.localeCompare(b));
      output(ctx, mounts, () =>
        flags.detailed
          ? columns(
              ['Path', 'Type', 'Accessor', 'Default TTL', 'Max TTL', 'Local', 'Seal Wrap', 'Options', 'Description'],
              sorted.map(([path, mount]) => [
                path,
                mount.type,
                mount.accessor,
                ttl(mount.config.default_lease_ttl),
                ttl(mount.config.max_lease_ttl),
                String(mount.local),
                String(mount.seal_wrap),
                formatValue(mount.options ?? {}),
                formatValue(mount.description),
              ]),
            )
          : columns(['Path', 'Type', 'Accessor', 'Description'], sorted.map(([path, mount]) => [path, mount.type, mount.accessor, formatValue(mount.description)])),
      );
      return 0;
    },
  };
}

function ttl(value: number | string | undefined): string {
  if (!value) return 'system';
  return typeof value === 'number' ? humanDuration(value) : value;
}

export function tuneCommand(kind: MountKind): Command {
  return {
    args: 'PATH',
    summary: `Tune the ${NOUN[kind]} at PATH: TTLs, description, options.`,
    flags: TUNE_FLAGS,
    async run(ctx, { flags, positionals }) {
      const path = mountPath(kind, onlyPath(`${kind} tune`, positionals));
      const body = tuneBody(flags);
      if (Object.keys(body).length === 0) throw new UsageError('nothing to tune: give at least one of -description, -default-lease-ttl, -max-lease-ttl, -options');
      await ctx.client.write(`${TABLE[kind]}/${path}/tune`, body);
      println(ctx.io.stdout, `Success! Tuned the ${NOUN[kind]} at: ${path}/`);
      return 0;
    },
  };
}
