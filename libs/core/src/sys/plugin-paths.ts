import { listResponse, type FieldData, type FieldMap, type PathDeclaration, type Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { MountData } from '../mounts/mount-data';
import { assertPluginType, canonicalVersion, RUNTIME_TYPES, type PluginCatalog, type PluginRecord, type RuntimeCatalog, type RuntimeRecord } from '../plugins/catalog';
import type { Plugins } from '../plugins/plugins';
import type { Router } from '../routing/router';

/** What sys/plugins uses of the core's parts. */
export interface PluginPathsDeps {
  /** The built-in plugins, the two catalogs, and the check of a registration before it is stored. */
  plugins: Pick<Plugins, 'builtins' | 'builtin' | 'mountable' | 'validate'> & {
    readonly catalog: Pick<PluginCatalog, 'all' | 'get' | 'put' | 'delete'>;
    readonly runtimes: Pick<RuntimeCatalog, 'get' | 'put' | 'delete' | 'list'>;
  };
  /** Reloads drop the backends of the mounts named. */
  mountData: Pick<MountData, 'reloadBackends'>;
  /** The namespace whose mounts a reload names. */
  router: Pick<Router, 'namespaceOf'>;
}

const PLUGIN_FIELDS: FieldMap = {
  sha256: { type: 'string', required: true, description: 'SHA-256 of the plugin executable (or of the OCI image), hex.' },
  command: { type: 'string', default: '', description: 'Executable of the plugin, relative to the plugin directory (or the entrypoint in the OCI image).' },
  args: { type: 'comma-string-list', default: [], description: 'Arguments the plugin is started with.' },
  env: { type: 'comma-string-list', default: [], description: 'Environment variables (KEY=value) the plugin is started with.' },
  version: { type: 'string', default: '', description: 'Semantic version of the plugin; empty registers the unversioned plugin.' },
  oci_image: { type: 'string', default: '', description: 'OCI image to run the plugin from, in a container runtime.' },
  runtime: { type: 'string', default: '', description: 'Plugin runtime (sys/plugins/runtimes/catalog) to run the OCI image with.' },
};

const RUNTIME_FIELDS: FieldMap = {
  oci_runtime: { type: 'string', default: 'runsc', description: 'OCI-compliant container runtime.' },
  cgroup_parent: { type: 'string', default: '', description: 'Parent cgroup of each container.' },
  cpu_nanos: { type: 'int', default: 0, description: 'CPU limit per container in billionths of a CPU; 0: no limit.' },
  memory_bytes: { type: 'int', default: 0, description: 'Memory limit per container in bytes; 0: no limit.' },
};

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

function checkName(kind: string, name: string): string {
  if (!NAME.test(name)) throw ServiceError.badRequest(`invalid ${kind} name "${name}": letters, digits, "_", "." and "-" only`);
  return name;
}

function runtimeType(type: string): string {
  if (!(RUNTIME_TYPES as readonly string[]).includes(type)) throw ServiceError.badRequest(`unknown plugin runtime type "${type}"; known types: ${RUNTIME_TYPES.join(', ')}`);
  return type;
}

/** A registration from the request, checked field by field. */
function pluginRecord(f: FieldData): PluginRecord {
  const sha256 = f.get<string>('sha256').toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw ServiceError.badRequest('field "sha256": must be the 64 hexadecimal digits of a SHA-256');
  const env = f.get<string[]>('env');
  const badEnv = env.find((entry) => !/^[^=]+=/.test(entry));
  if (badEnv !== undefined) throw ServiceError.badRequest('field "env": every entry must be KEY=value');
  const record: PluginRecord = {
    name: checkName('plugin', f.params.name),
    type: assertPluginType(f.params.type),
    version: canonicalVersion(f.get('version')),
    sha256,
    command: f.get('command'),
    args: f.get('args'),
    env,
    oci_image: f.get('oci_image'),
    runtime: f.get('runtime'),
  };
  if (record.command === '' && record.oci_image === '') throw ServiceError.badRequest('one of "command" or "oci_image" must be set');
  return record;
}

function runtimeRecord(f: FieldData): RuntimeRecord {
  const record: RuntimeRecord = {
    name: checkName('runtime', f.params.name),
    type: runtimeType(f.params.type),
    oci_runtime: f.get('oci_runtime') || 'runsc',
    cgroup_parent: f.get('cgroup_parent'),
    cpu_nanos: f.get('cpu_nanos'),
    memory_bytes: f.get('memory_bytes'),
  };
  for (const field of ['cpu_nanos', 'memory_bytes'] as const) {
    if (record[field] < 0) throw ServiceError.badRequest(`field "${field}": must not be negative`);
  }
  return record;
}

/** How the catalog lists a registration (Vault's `detailed` entries); env is never shown, it may hold secrets. */
function describePlugin(record: PluginRecord): { name: string; type: string; [field: string]: unknown } {
  return {
    name: record.name,
    type: record.type,
    version: record.version,
    builtin: false,
    sha256: record.sha256,
    ...(record.oci_image ? { oci_image: record.oci_image } : {}),
    ...(record.runtime ? { runtime: record.runtime } : {}),
  };
}

/** sys/plugins/catalog, sys/plugins/runtimes/catalog and sys/plugins/reload/backend (root namespace; sudo as in Vault). */
export function pluginPaths(core: PluginPathsDeps): PathDeclaration[] {
  const { plugins } = core;
  return [
    {
      pattern: 'plugins/catalog',
      synopsis: 'Lists the plugins of every type: built in, and registered in the catalog.',
      operations: {
        read: {
          summary: 'List the plugins by type, and every version in detail.',
          rootNamespace: true,
          handler: async () => {
            const builtins = plugins.builtins();
            const registered = await plugins.catalog.all();
            const names = (type: string) => [...new Set([...builtins, ...registered].filter((plugin) => plugin.type === type).map((plugin) => plugin.name))].sort();
            return {
              data: {
                auth: names('auth'),
                database: names('database'),
                secret: names('secret'),
                detailed: [
                  ...builtins.map((plugin) => ({ ...plugin, builtin: true, deprecation_status: 'supported' })),
                  ...registered.map(describePlugin),
                ].sort((a, b) => a.type.localeCompare(b.type) || a.name.localeCompare(b.name)),
              },
            };
          },
        },
      },
    },
    {
      pattern: 'plugins/catalog/:type/',
      synopsis: 'Lists the plugins of one type.',
      operations: {
        list: {
          summary: 'List the plugins of a type.',
          sudo: true,
          rootNamespace: true,
          handler: async (_req, f) => {
            return listResponse(await plugins.mountable(assertPluginType(f.params.type)));
          },
        },
      },
    },
    {
      pattern: 'plugins/catalog/:type/:name',
      synopsis: 'Registers, reads or removes a plugin of the catalog (one version of it).',
      description: 'A command is run from the plugin directory after its sha256 is checked, at registration and at every start.',
      fields: PLUGIN_FIELDS,
      operations: {
        update: {
          summary: 'Register a plugin, or update its registration.',
          sudo: true,
          rootNamespace: true,
          handler: async (_req, f) => {
            const record = pluginRecord(f);
            await plugins.validate(record);
            await plugins.catalog.put(record);
            return undefined;
          },
        },
        read: {
          summary: 'Read a plugin registration (`version` selects one).',
          sudo: true,
          rootNamespace: true,
          handler: async (_req, f) => {
            const type = assertPluginType(f.params.type);
            const version = f.get<string>('version');
            const builtin = plugins.builtin(type, f.params.name);
            if (builtin && (version === '' || version === builtin.version)) {
              const record = version === '' ? await plugins.catalog.get(type, f.params.name, '') : null;
              if (!record) return { data: { ...builtin, builtin: true, command: '', args: [], sha256: '', deprecation_status: 'supported' } };
            }
            const record = await plugins.catalog.get(type, f.params.name, canonicalVersion(version));
            return record ? { data: { ...describePlugin(record), command: record.command, args: record.args, oci_image: record.oci_image, runtime: record.runtime } } : undefined;
          },
        },
        delete: {
          summary: 'Remove a plugin registration (`version` selects one); mounts running it fail to start afterwards.',
          sudo: true,
          rootNamespace: true,
          handler: async (_req, f) => {
            const type = assertPluginType(f.params.type);
            const version = f.get<string>('version');
            if (plugins.builtin(type, f.params.name)?.version === version) throw ServiceError.badRequest(`cannot delete the built-in plugin "${f.params.name}"`);
            await plugins.catalog.delete(type, f.params.name, canonicalVersion(version));
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'plugins/runtimes/catalog',
      aliases: ['plugins/runtimes/catalog/'],
      synopsis: 'Lists the plugin runtimes.',
      fields: { type: { type: 'string', default: '', description: 'Only runtimes of this type (container).' } },
      operations: {
        read: { summary: 'List the plugin runtimes.', sudo: true, rootNamespace: true, handler: async (_req, f) => listRuntimes(f) },
        list: { summary: 'List the plugin runtimes.', sudo: true, rootNamespace: true, handler: async (_req, f) => listRuntimes(f) },
      },
    },
    {
      pattern: 'plugins/runtimes/catalog/:type/:name',
      synopsis: 'Registers, reads or removes a plugin runtime.',
      fields: RUNTIME_FIELDS,
      operations: {
        update: {
          summary: 'Register a plugin runtime, or update it.',
          sudo: true,
          rootNamespace: true,
          handler: async (_req, f) => {
            await plugins.runtimes.put(runtimeRecord(f));
            return undefined;
          },
        },
        read: {
          summary: 'Read a plugin runtime.',
          sudo: true,
          rootNamespace: true,
          handler: async (_req, f) => {
            const record = await plugins.runtimes.get(runtimeType(f.params.type), f.params.name);
            return record ? { data: { ...record } } : undefined;
          },
        },
        delete: {
          summary: 'Remove a plugin runtime; refused while a registered plugin uses it.',
          sudo: true,
          rootNamespace: true,
          handler: async (_req, f) => {
            const type = runtimeType(f.params.type);
            if (!(await plugins.runtimes.get(type, f.params.name))) throw ServiceError.badRequest(`plugin runtime "${f.params.name}" (${type}) does not exist`);
            const users = (await plugins.catalog.all()).filter((record) => record.runtime === f.params.name);
            if (users.length > 0) {
              throw ServiceError.badRequest(
                `unable to delete plugin runtime "${f.params.name}": registered plugins reference it (${users.map((record) => `${record.type}/${record.name}${record.version ? ` ${record.version}` : ''}`).join(', ')})`,
              );
            }
            await plugins.runtimes.delete(type, f.params.name);
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'plugins/reload/backend',
      synopsis: 'Reloads the backends of mounts: those running a plugin, or the mounts named.',
      fields: {
        plugin: { type: 'string', default: '', description: 'Reload every mount of this plugin (in the namespace of the request).' },
        mounts: { type: 'comma-string-list', default: [], description: 'Reload these mounts (paths such as "secret/" or "auth/userpass/").' },
        scope: { type: 'string', default: '', allowed: ['', 'global'], description: 'Empty: this gateway; "global": every gateway of the cluster.' },
      },
      operations: {
        update: {
          summary: 'Reload plugin backends.',
          sudo: true,
          handler: async (req, f) => {
            const uuids = reloadTargets(core, req, f);
            const reloadId = req.requestId;
            const global = f.get<string>('scope') === 'global';
            await core.mountData.reloadBackends(uuids, global);
            return { data: { reload_id: reloadId }, status: global ? 202 : 200 };
          },
        },
      },
    },
  ];

  async function listRuntimes(f: FieldData) {
    const type = f.get<string>('type');
    const records = await plugins.runtimes.list(type === '' ? undefined : runtimeType(type));
    return { data: { runtimes: records } };
  }
}

/** The mounts a reload names: by plugin or by path, exactly one of the two. */
function reloadTargets(core: PluginPathsDeps, req: Request, f: FieldData): string[] {
  const plugin = f.get<string>('plugin');
  const mounts = f.get<string[]>('mounts');
  if ((plugin === '') === (mounts.length === 0)) throw ServiceError.badRequest('exactly one of "plugin" or "mounts" must be given');
  const namespace = core.router.namespaceOf(req);
  if (plugin !== '') {
    const matching = namespace.allMounts().filter(({ mount }) => mount.type === plugin);
    if (matching.length === 0) throw ServiceError.badRequest(`no mount runs plugin "${plugin}"`);
    return matching.map(({ mount }) => mount.uuid);
  }
  return mounts.map((given) => {
    const path = given.replace(/^\/+/, '').replace(/\/*$/, '/');
    const entry = path.startsWith('auth/') ? namespace.authMounts.get(path.slice('auth/'.length)) : namespace.secretMounts.get(path);
    if (!entry) throw ServiceError.badRequest(`no mount at "${given}"`);
    return entry.uuid;
  });
}
