import { UsageError } from './args';
import type { Command, CommandContext } from './context';
import { println } from './context';
import type { Envelope } from '@svc/sdk';
import { columns, formatValue, keyValueTable, output } from './format';

// `svc plugin ...`: the plugin catalog (sys/plugins/catalog) and plugin reloads, as Vault's `vault plugin`.

function typeAndName(command: string, positionals: string[]): [type: string, name: string] {
  if (positionals.length !== 2) throw new UsageError(`${command} takes a TYPE (auth, database or secret) and a NAME`);
  return [positionals[0], positionals[1]];
}

/** Prints a catalog entry as a table (or JSON); exit code 2 when there is none. */
function show(ctx: CommandContext, entry: Envelope | null, what: string): number {
  const data = entry?.data;
  if (!data) {
    println(ctx.io.stderr, `No value found for ${what}`);
    return 2;
  }
  output(ctx, data, () => keyValueTable(Object.entries(data).sort(([a], [b]) => a.localeCompare(b))));
  return 0;
}

/** The `version` query parameter of a catalog read or delete, when -version is given. */
const versionQuery = (version: unknown) => ({ version: version ? String(version) : undefined });

export const pluginRegisterCommand: Command = {
  args: 'TYPE NAME',
  summary: 'Register a plugin in the catalog (its executable in the server\'s plugin_directory).',
  flags: {
    sha256: { kind: 'string', description: 'SHA-256 of the plugin executable or OCI image (required)' },
    command: { kind: 'string', description: 'executable, relative to the plugin directory (default: NAME unless -oci_image)' },
    args: { kind: 'list', description: 'arguments to start the plugin with, comma-separated' },
    env: { kind: 'list', description: 'KEY=value environment entries, comma-separated' },
    version: { kind: 'string', description: 'semantic version of the plugin' },
    oci_image: { kind: 'string', description: 'OCI image to run the plugin from' },
    runtime: { kind: 'string', description: 'plugin runtime to run the OCI image with' },
  },
  async run(ctx, { flags, positionals }) {
    const [type, name] = typeAndName('plugin register', positionals);
    if (!flags.sha256) throw new UsageError('plugin register needs -sha256');
    const ociImage = String(flags.oci_image ?? '');
    await ctx.client.write(`sys/plugins/catalog/${type}/${name}`, {
      sha256: flags.sha256,
      command: String(flags.command ?? (ociImage ? '' : name)),
      args: flags.args ?? [],
      env: flags.env ?? [],
      version: flags.version ?? '',
      oci_image: ociImage,
      runtime: flags.runtime ?? '',
    });
    println(ctx.io.stdout, `Success! Registered plugin: ${name}`);
    return 0;
  },
};

export const pluginDeregisterCommand: Command = {
  args: 'TYPE NAME',
  summary: 'Remove a plugin (one version of it) from the catalog.',
  flags: { version: { kind: 'string', description: 'the version to remove (default: the unversioned registration)' } },
  async run(ctx, { flags, positionals }) {
    const [type, name] = typeAndName('plugin deregister', positionals);
    await ctx.client.request('DELETE', `sys/plugins/catalog/${type}/${name}`, { query: versionQuery(flags.version) });
    println(ctx.io.stdout, `Success! Deregistered plugin (if it was registered): ${name}`);
    return 0;
  },
};

export const pluginInfoCommand: Command = {
  args: 'TYPE NAME',
  summary: 'Show a plugin of the catalog.',
  flags: { version: { kind: 'string', description: 'the version to show' } },
  async run(ctx, { flags, positionals }) {
    const [type, name] = typeAndName('plugin info', positionals);
    return show(ctx, await ctx.client.read(`sys/plugins/catalog/${type}/${name}`, versionQuery(flags.version)), `plugin ${type}/${name}`);
  },
};

interface DetailedPlugin {
  name: string;
  type: string;
  version: string;
  deprecation_status?: string;
}

export const pluginListCommand: Command = {
  args: '[TYPE]',
  summary: 'List the plugins of the catalog, built in and registered (of one TYPE).',
  flags: { detailed: { kind: 'boolean', description: 'show every version, with its type and deprecation status' } },
  async run(ctx, { flags, positionals }) {
    if (positionals.length > 1) throw new UsageError('plugin list takes at most one TYPE');
    const catalog = (await ctx.client.read('sys/plugins/catalog'))?.data as { detailed?: DetailedPlugin[] } | undefined;
    const plugins = (catalog?.detailed ?? []).filter((plugin) => positionals.length === 0 || plugin.type === positionals[0]);
    output(ctx, plugins, () =>
      flags.detailed
        ? columns(['Name', 'Type', 'Version', 'Deprecation Status'], plugins.map((plugin) => [plugin.name, plugin.type, plugin.version, plugin.deprecation_status ?? 'n/a']))
        : columns(['Name', 'Version'], plugins.map((plugin) => [plugin.name, plugin.version || 'n/a'])),
    );
    return 0;
  },
};

export const pluginReloadCommand: Command = {
  args: '',
  summary: 'Reload the backends of a plugin\'s mounts, or of the mounts named.',
  flags: {
    plugin: { kind: 'string', description: 'reload every mount of this plugin' },
    mounts: { kind: 'list', description: 'reload these mounts (comma-separated paths)' },
    scope: { kind: 'string', description: '"global": on every gateway of the cluster (default: the one answering)' },
  },
  async run(ctx: CommandContext, { flags }) {
    const mounts = (flags.mounts as string[] | undefined) ?? [];
    const answer = await ctx.client.write('sys/plugins/reload/backend', { plugin: flags.plugin ?? '', mounts, scope: flags.scope ?? '' });
    const what = flags.plugin ? `plugin: ${String(flags.plugin)}` : `mounts: ${mounts.join(', ')}`;
    const reloadId = (answer?.data as { reload_id?: string } | undefined)?.reload_id;
    println(ctx.io.stdout, flags.scope === 'global' ? `Success! Reloading ${what}, reload_id: ${reloadId ?? ''}` : `Success! Reloaded ${what}`);
    return 0;
  },
};

const RUNTIME_TYPE_FLAG = { type: { kind: 'string' as const, description: 'the runtime type (only "container", the default)' } };

function runtimeName(command: string, positionals: string[]): string {
  if (positionals.length !== 1) throw new UsageError(`${command} takes exactly one NAME`);
  return positionals[0];
}

const runtimeType = (flags: Record<string, unknown>) => String(flags.type ?? 'container');

export const pluginRuntimeRegisterCommand: Command = {
  args: 'NAME',
  summary: 'Register a plugin runtime (sys/plugins/runtimes/catalog), or update it.',
  flags: {
    ...RUNTIME_TYPE_FLAG,
    oci_runtime: { kind: 'string', description: 'OCI-compliant container runtime (default runsc)' },
    cgroup_parent: { kind: 'string', description: 'parent cgroup of each container' },
    cpu_nanos: { kind: 'int', description: 'CPU limit per container in billionths of a CPU' },
    memory_bytes: { kind: 'int', description: 'memory limit per container in bytes' },
  },
  async run(ctx, { flags, positionals }) {
    const name = runtimeName('plugin runtime register', positionals);
    const { type: _type, ...fields } = flags;
    await ctx.client.write(`sys/plugins/runtimes/catalog/${runtimeType(flags)}/${name}`, fields);
    println(ctx.io.stdout, `Success! Registered plugin runtime: ${name}`);
    return 0;
  },
};

export const pluginRuntimeDeregisterCommand: Command = {
  args: 'NAME',
  summary: 'Remove a plugin runtime; refused while a registered plugin uses it.',
  flags: RUNTIME_TYPE_FLAG,
  async run(ctx, { flags, positionals }) {
    const name = runtimeName('plugin runtime deregister', positionals);
    await ctx.client.delete(`sys/plugins/runtimes/catalog/${runtimeType(flags)}/${name}`);
    println(ctx.io.stdout, `Success! Deregistered plugin runtime: ${name}`);
    return 0;
  },
};

export const pluginRuntimeInfoCommand: Command = {
  args: 'NAME',
  summary: 'Show a plugin runtime.',
  flags: RUNTIME_TYPE_FLAG,
  async run(ctx, { flags, positionals }) {
    const name = runtimeName('plugin runtime info', positionals);
    return show(ctx, await ctx.client.read(`sys/plugins/runtimes/catalog/${runtimeType(flags)}/${name}`), `plugin runtime ${name}`);
  },
};

export const pluginRuntimeListCommand: Command = {
  args: '',
  summary: 'List the plugin runtimes.',
  flags: { type: { kind: 'string', description: 'only runtimes of this type (container)' } },
  async run(ctx, { flags }) {
    const listed = await ctx.client.read('sys/plugins/runtimes/catalog', { type: flags.type === undefined ? undefined : String(flags.type) });
    const runtimes = (listed?.data as { runtimes?: Record<string, unknown>[] } | undefined)?.runtimes ?? [];
    output(ctx, runtimes, () =>
      columns(
        ['Name', 'Type', 'OCI Runtime', 'Parent Cgroup', 'CPU Nanos', 'Memory Bytes'],
        runtimes.map((runtime) => ['name', 'type', 'oci_runtime', 'cgroup_parent', 'cpu_nanos', 'memory_bytes'].map((field) => formatValue(runtime[field] === '' ? null : runtime[field]))),
      ),
    );
    return 0;
  },
};
