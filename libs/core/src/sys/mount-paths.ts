import { parseDuration, type FieldData, type MountInfo, type FieldMap, type PathDeclaration, type Request, type Response } from '@svc/framework';
import type { ServerConfig } from '@svc/config';
import type { EngineRegistry, PluginHost } from '@svc/engine-host';
import { ServiceError } from '@svc/api-contract';
import type { LeaseLifecycle } from '../leases/lease-lifecycle';
import type { MountData } from '../mounts/mount-data';
import type { MountEntry, MountRequest, MountTable } from '../mounts/mount-table';
import { BUILTIN_VERSION, type Plugins } from '../plugins/plugins';
import type { Router } from '../routing/router';

/** What sys/mounts, sys/auth and sys/remount use of the core's parts. */
export interface MountPathsDeps {
  /** The system TTLs: a mount's own are checked against them, and stand in for unset ones. */
  config: Pick<ServerConfig, 'defaultLeaseTtl' | 'maxLeaseTtl'>;
  /** Which types are built in (mounted in every namespace, never enabled by hand). */
  engines: Pick<EngineRegistry, 'enabling'>;
  /** A disabled mount's leases are revoked first. */
  leaseLifecycle: Pick<LeaseLifecycle, 'revokeUnder'>;
  mountData: Pick<MountData, 'purge' | 'recordMove' | 'move'>;
  /** What a new mount runs (built in or from the catalog); an external plugin is started once before it is mounted. */
  plugins: Pick<Plugins, 'forMount' | 'mountable'> & { readonly host: Pick<PluginHost, 'check'> };
  router: Pick<Router, 'namespaceOf'>;
}

const MOUNT_FIELDS: FieldMap = {
  type: { type: 'string', required: true, description: 'Type of the engine or auth method, e.g. "kv" or "transit".' },
  description: { type: 'string', default: '', description: 'Human-friendly description of the mount.' },
  config: { type: 'map', default: {}, description: 'Mount configuration: default_lease_ttl, max_lease_ttl (durations), listing_visibility ("unauth" or "hidden").' },
  options: { type: 'kv-pairs', default: {}, description: 'Engine options, e.g. {"version": "2"} for kv.' },
  local: { type: 'bool', default: false, description: 'Mount is local to this cluster (not replicated).' },
  seal_wrap: { type: 'bool', default: false, description: 'Seal-wrap the mount (accepted for compatibility).' },
  plugin_version: { type: 'string', default: '', description: 'Plugin version to run: a version registered in the plugin catalog, or the built-in one.' },
  plugin_name: { type: 'string', default: '', description: 'With type "plugin": the name of the plugin to mount (from the plugin catalog).' },
};

const TUNE_FIELDS: FieldMap = {
  default_lease_ttl: { type: 'duration', description: 'Default lease TTL of the mount.' },
  max_lease_ttl: { type: 'duration', description: 'Maximum lease TTL of the mount.' },
  description: { type: 'string', description: 'Human-friendly description of the mount.' },
  options: { type: 'kv-pairs', description: 'Engine options to merge, e.g. {"version": "2"}.' },
  listing_visibility: { type: 'string', description: 'Whether the UI lists the mount to callers without a token: "unauth", or "hidden" (the default).' },
};

/** Values of `listing_visibility`; empty resets it to the default (hidden). */
const LISTING_VISIBILITIES = ['unauth', 'hidden', ''];

function listingVisibility(name: string, value: unknown): string {
  if (typeof value !== 'string' || !LISTING_VISIBILITIES.includes(value)) {
    throw ServiceError.badRequest(`field "${name}": must be "unauth" or "hidden"`);
  }
  return value;
}

/** How a mount is shown by sys/mounts and sys/auth. */
export function describeMount(entry: MountEntry): Record<string, unknown> {
  return {
    type: entry.type,
    description: entry.description,
    accessor: entry.accessor,
    uuid: entry.uuid,
    config: {
      default_lease_ttl: entry.config.default_lease_ttl,
      max_lease_ttl: entry.config.max_lease_ttl,
      force_no_cache: false,
      ...(entry.config.listing_visibility ? { listing_visibility: entry.config.listing_visibility } : {}),
    },
    options: Object.keys(entry.options).length ? entry.options : null,
    local: entry.local,
    seal_wrap: entry.seal_wrap,
    external_entropy_access: false,
    plugin_version: entry.plugin_version,
    running_plugin_version: entry.external ? entry.plugin_version : BUILTIN_VERSION,
    deprecation_status: 'supported',
  };
}

function durationField(name: string, value: unknown): number {
  try {
    return parseDuration(value);
  } catch {
    throw ServiceError.badRequest(`field "${name}": not a valid duration`);
  }
}

/** Parses the `config` map of a mount request: lease TTLs are durations. */
function mountConfig(f: FieldData): Partial<MountEntry['config']> {
  const config = f.get<Record<string, unknown>>('config') ?? {};
  const out: Partial<MountEntry['config']> = {};
  for (const name of ['default_lease_ttl', 'max_lease_ttl'] as const) {
    if (config[name] !== undefined && config[name] !== '') out[name] = durationField(`config.${name}`, config[name]);
  }
  if (config.listing_visibility !== undefined) out.listing_visibility = listingVisibility('config.listing_visibility', config.listing_visibility);
  return out;
}

/** The plugin a mount request names: its type, or with type "plugin" its `plugin_name` (Vault's older form). */
function pluginName(f: FieldData): string {
  const type = f.get<string>('type');
  if (type !== 'plugin') return type;
  const config = f.get<Record<string, unknown>>('config') ?? {};
  const name = f.get<string>('plugin_name') || (typeof config.plugin_name === 'string' ? config.plugin_name : '');
  if (name === '') throw ServiceError.badRequest('plugin_name must be given to mount a plugin of type "plugin"');
  return name;
}

/** The mount a request would create, for starting its plugin before the mount exists. */
function mountInfoOf(request: MountRequest, namespace: string): MountInfo {
  return {
    path: request.path,
    type: request.type,
    uuid: 'new-mount',
    accessor: '',
    namespace,
    description: request.description ?? '',
    config: { default_lease_ttl: 0, max_lease_ttl: 0 },
    options: request.options ?? {},
    local: false,
    seal_wrap: false,
    external: true,
    plugin_version: request.plugin_version,
  };
}

/** sys/mounts and sys/auth share one shape; `prefix` is "mounts" or "auth". */
function tablePaths(core: MountPathsDeps, prefix: 'mounts' | 'auth'): PathDeclaration[] {
  const table = (req: Request): MountTable => {
    const namespace = core.router.namespaceOf(req);
    return prefix === 'mounts' ? namespace.secretMounts : namespace.authMounts;
  };
  const kind = prefix === 'mounts' ? 'secrets engine' : 'auth method';
  const systemTtls = () => ({ default_lease_ttl: core.config.defaultLeaseTtl, max_lease_ttl: core.config.maxLeaseTtl });
  const find = (req: Request, path: string): MountEntry => {
    const entry = table(req).get(path.endsWith('/') ? path : `${path}/`);
    if (!entry) throw ServiceError.badRequest(`no ${kind} mounted at "${path}"`);
    return entry;
  };
  const tuneView = (entry: MountEntry): Response => ({
    data: {
      default_lease_ttl: entry.config.default_lease_ttl || core.config.defaultLeaseTtl,
      max_lease_ttl: entry.config.max_lease_ttl || core.config.maxLeaseTtl,
      force_no_cache: false,
      description: entry.description,
      options: Object.keys(entry.options).length ? entry.options : null,
      ...(entry.config.listing_visibility ? { listing_visibility: entry.config.listing_visibility } : {}),
    },
  });

  return [
    {
      pattern: prefix,
      dataAtTopLevel: true,
      synopsis: `Lists the mounted ${kind}s.`,
      operations: {
        read: {
          summary: `List the ${kind}s.`,
          handler: async (req) => ({ data: Object.fromEntries(table(req).list().map((e) => [e.path, describeMount(e)])) }),
        },
      },
    },
    {
      pattern: `${prefix}/*path/tune`,
      dataAtTopLevel: true,
      synopsis: `Reads or tunes the configuration of a mounted ${kind}.`,
      fields: TUNE_FIELDS,
      operations: {
        read: { summary: 'Read the mount tuning.', handler: async (req, f) => tuneView(find(req, f.params.path)) },
        update: {
          summary: 'Tune the mount.',
          handler: async (req, f) => {
            const config: Partial<MountEntry['config']> = {};
            if (f.has('default_lease_ttl')) config.default_lease_ttl = f.get('default_lease_ttl');
            if (f.has('max_lease_ttl')) config.max_lease_ttl = f.get('max_lease_ttl');
            if (f.has('listing_visibility')) config.listing_visibility = listingVisibility('listing_visibility', f.get('listing_visibility'));
            const entry = find(req, f.params.path);
            await table(req).tune(entry.path, { config, description: f.get('description'), options: f.has('options') ? f.get('options') : undefined }, systemTtls());
            return undefined;
          },
        },
      },
    },
    {
      pattern: `${prefix}/*path`,
      dataAtTopLevel: true,
      synopsis: `Enables, reads or disables a ${kind} at a path.`,
      fields: MOUNT_FIELDS,
      operations: {
        read: { summary: `Read the ${kind} at this path.`, handler: async (req, f) => ({ data: describeMount(find(req, f.params.path)) }) },
        update: {
          summary: `Enable a ${kind} at this path.`,
          handler: async (req, f) => {
            const named = pluginName(f);
            const wanted = prefix === 'mounts' ? 'secret' : 'auth';
            const enabled = core.engines.enabling(named, wanted);
            if (enabled?.engine.builtin) {
              throw ServiceError.badRequest(`${kind} type "${named}" is mounted in every namespace and cannot be enabled again`);
            }
            // Vault's names: an alias ("aws") stays the mount's type; a variant ("kv-v2") is its type with options.
            const type = enabled?.type ?? named;
            const plugin = await core.plugins.forMount(wanted, type, f.get('plugin_version'));
            if (!plugin) throw ServiceError.badRequest(`unknown ${kind} type "${type}"; known types: ${(await core.plugins.mountable(wanted)).join(', ') || 'none'}`);
            if (plugin.external && wanted === 'auth') {
              throw ServiceError.badRequest(`auth method "${type}" is an external plugin: this server runs external plugins as secrets engines only`);
            }
            const request = {
              path: f.params.path,
              type,
              description: f.get<string>('description'),
              config: mountConfig(f),
              options: { ...f.get<Record<string, string>>('options'), ...enabled?.options },
              local: f.get<boolean>('local'),
              seal_wrap: f.get<boolean>('seal_wrap'),
              plugin_version: plugin.version,
              external: plugin.external,
            };
            // An external plugin is started once before it is mounted, so one that cannot run is refused now.
            if (plugin.external) await core.plugins.host.check(mountInfoOf(request, core.router.namespaceOf(req).path));
            await table(req).mount(request, systemTtls());
            return undefined;
          },
        },
        delete: {
          summary: `Disable the ${kind} at this path; its data is deleted.`,
          handler: async (req, f) => {
            const path = f.params.path.endsWith('/') ? f.params.path : `${f.params.path}/`;
            if (!table(req).get(path)) return undefined; // Vault: disabling a missing mount succeeds
            await core.leaseLifecycle.revokeUnder(core.router.namespaceOf(req), prefix === 'auth' ? `auth/${path}` : path);
            const entry = await table(req).unmount(path);
            await core.mountData.purge(entry);
            return undefined;
          },
        },
      },
    },
  ];
}

/** sys/mounts, sys/auth (with tune) and sys/remount. */
export function mountPaths(core: MountPathsDeps): PathDeclaration[] {
  return [
    ...tablePaths(core, 'mounts'),
    ...tablePaths(core, 'auth'),
    {
      pattern: 'remount',
      dataAtTopLevel: true,
      synopsis: 'Moves a mount to a new path; its data moves with it.',
      fields: {
        from: { type: 'string', required: true, description: 'Current path of the mount.' },
        to: { type: 'string', required: true, description: 'New path of the mount.' },
      },
      operations: {
        update: {
          summary: 'Move a mount.',
          handler: async (req, f) => {
            const from = f.get<string>('from').replace(/^\/+/, '');
            const to = f.get<string>('to').replace(/^\/+/, '');
            const isAuth = from.startsWith('auth/');
            if (isAuth !== to.startsWith('auth/')) throw ServiceError.badRequest('cannot move a mount between auth/ and secret engines');
            const namespace = core.router.namespaceOf(req);
            const table = isAuth ? namespace.authMounts : namespace.secretMounts;
            const strip = (p: string) => (isAuth ? p.slice('auth/'.length) : p);
            await table.remount(strip(from), strip(to));
            return { data: { migration_id: await core.mountData.recordMove(from, to) } };
          },
        },
      },
    },
    {
      pattern: 'remount/status/:migration_id',
      synopsis: 'Status of a mount move.',
      operations: {
        read: {
          summary: 'Read the status of a mount move.',
          handler: async (_req, f) => {
            const info = await core.mountData.move(f.params.migration_id);
            if (!info) throw ServiceError.notFound(`no mount migration "${f.params.migration_id}"`);
            return { data: { migration_id: f.params.migration_id, migration_info: info } };
          },
        },
      },
    },
  ];
}
