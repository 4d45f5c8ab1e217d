import { UsageError } from './args';
import type { Command } from './context';
import { println } from './context';
import { columnsTable, formatValue, output } from './format';
import { onlyPath } from './secrets';

export const authEnableCommand: Command = {
  name: 'auth enable',
  args: 'TYPE',
  summary: 'Enable an auth method of TYPE (userpass, approle, ...) at auth/PATH/ (default: auth/TYPE/).',
  flags: {
    path: { kind: 'string', description: 'where to mount it, below auth/ (default: the type)' },
    description: { kind: 'string', description: 'a description shown by svc auth list' },
  },
  async run(ctx, { flags, positionals }) {
    if (positionals.length !== 1) throw new UsageError('auth enable takes exactly one TYPE argument');
    const type = positionals[0];
    const path = mountPath(String(flags.path ?? type));
    await ctx.client.write(`sys/auth/${path}`, { type, description: flags.description ?? '' });
    println(ctx.io.stdout, `Success! Enabled ${type} auth method at: ${path}/`);
    return 0;
  },
};

export const authDisableCommand: Command = {
  name: 'auth disable',
  args: 'PATH',
  summary: 'Disable the auth method at auth/PATH/; the tokens it issued are revoked.',
  flags: {},
  async run(ctx, { positionals }) {
    const path = mountPath(onlyPath('auth disable', positionals));
    await ctx.client.delete(`sys/auth/${path}`);
    println(ctx.io.stdout, `Success! Disabled the auth method (if it existed) at: ${path}/`);
    return 0;
  },
};

export const authListCommand: Command = {
  name: 'auth list',
  args: '',
  summary: 'List the enabled auth methods.',
  flags: {},
  async run(ctx) {
    const mounts = ((await ctx.client.read('sys/auth'))?.data ?? {}) as Record<string, { type: string; accessor: string; description: string }>;
    output(ctx, mounts, () =>
      columnsTable(
        ['Path', 'Type', 'Accessor', 'Description'],
        Object.entries(mounts)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([path, mount]) => [path, mount.type, mount.accessor, formatValue(mount.description)]),
      ),
    );
    return 0;
  },
};

function mountPath(path: string): string {
  const trimmed = path.replace(/^\/+|\/+$/g, '').replace(/^auth\//, '');
  if (trimmed === '') throw new UsageError('the path must not be empty');
  return trimmed;
}
