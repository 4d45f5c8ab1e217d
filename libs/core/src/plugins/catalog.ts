import * as semver from 'semver';
import { ServiceError } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';

/** The plugin types of the catalog, as Vault names them. */
export const PLUGIN_TYPES = ['auth', 'database', 'secret'] as const;
export type PluginType = (typeof PLUGIN_TYPES)[number];

/** The only plugin runtime type. */
export const RUNTIME_TYPES = ['container'] as const;

/** One registration of an external plugin (a name, a type and a version, '' for the unversioned one). */
export interface PluginRecord {
  name: string;
  type: PluginType;
  version: string;
  sha256: string;
  command: string;
  args: string[];
  env: string[];
  oci_image: string;
  runtime: string;
}

export interface RuntimeRecord {
  name: string;
  type: string;
  oci_runtime: string;
  cgroup_parent: string;
  cpu_nanos: number;
  memory_bytes: number;
}

/** Where the unversioned registration of a plugin is stored among its versions (no version is spelled so). */
const UNVERSIONED = 'unversioned';

export function isPluginType(type: string): type is PluginType {
  return (PLUGIN_TYPES as readonly string[]).includes(type);
}

export function assertPluginType(type: string): PluginType {
  if (!isPluginType(type)) throw ServiceError.badRequest(`unknown plugin type "${type}"; known types: ${PLUGIN_TYPES.join(', ')}`);
  return type;
}

/**
 * A plugin version as the catalog keeps it: semantic, with a leading "v" ('' stays the unversioned
 * registration). Built-in versions are the server's own to name.
 */
export function canonicalVersion(version: string): string {
  if (version === '') return '';
  const parsed = semver.parse(version);
  if (!parsed) throw ServiceError.badRequest(`version "${version}" is not a valid semantic version`);
  if (parsed.build.includes('builtin') || parsed.build.some((part) => part.startsWith('builtin'))) {
    throw ServiceError.badRequest(`version "${version}": only built-in plugins carry "+builtin" versions`);
  }
  return `v${parsed.version}${parsed.build.length ? `+${parsed.build.join('.')}` : ''}`;
}

/** Orders versions as semantic versions, the unversioned registration first. */
export function compareVersions(a: string, b: string): number {
  if (a === '' || b === '') return a === b ? 0 : a === '' ? -1 : 1;
  return semver.compareBuild(a, b);
}

/**
 * The plugin catalog in the barrier: `core/plugin-catalog/<type>/<name>/<version>`, one record per
 * registration. Root namespace only, as in Vault.
 */
export class PluginCatalog {
  constructor(private readonly view: StorageView) {}

  async get(type: PluginType, name: string, version: string): Promise<PluginRecord | null> {
    return this.view.getJSON<PluginRecord>(`${type}/${name}/${version || UNVERSIONED}`);
  }

  async put(record: PluginRecord): Promise<void> {
    await this.view.putJSON(`${record.type}/${record.name}/${record.version || UNVERSIONED}`, record);
  }

  async delete(type: PluginType, name: string, version: string): Promise<void> {
    await this.view.delete(`${type}/${name}/${version || UNVERSIONED}`);
  }

  /** Names of the registered plugins of a type, sorted. */
  async names(type: PluginType): Promise<string[]> {
    return (await this.view.list(`${type}/`)).map((key) => key.replace(/\/$/, '')).sort();
  }

  /** Every registration of a plugin, oldest version first. */
  async versions(type: PluginType, name: string): Promise<PluginRecord[]> {
    const records = await Promise.all((await this.view.list(`${type}/${name}/`)).map((key) => this.view.getJSON<PluginRecord>(`${type}/${name}/${key}`)));
    return records.filter((record): record is PluginRecord => record !== null).sort((a, b) => compareVersions(a.version, b.version));
  }

  async all(): Promise<PluginRecord[]> {
    const all: PluginRecord[] = [];
    for (const type of PLUGIN_TYPES) for (const name of await this.names(type)) all.push(...(await this.versions(type, name)));
    return all;
  }
}

/** The plugin runtime catalog in the barrier: `core/plugin-runtime-catalog/<type>/<name>`. */
export class RuntimeCatalog {
  constructor(private readonly view: StorageView) {}

  async get(type: string, name: string): Promise<RuntimeRecord | null> {
    return this.view.getJSON<RuntimeRecord>(`${type}/${name}`);
  }

  async put(record: RuntimeRecord): Promise<void> {
    await this.view.putJSON(`${record.type}/${record.name}`, record);
  }

  async delete(type: string, name: string): Promise<void> {
    await this.view.delete(`${type}/${name}`);
  }

  async list(type?: string): Promise<RuntimeRecord[]> {
    const records: RuntimeRecord[] = [];
    for (const runtimeType of type ? [type] : RUNTIME_TYPES) {
      for (const name of await this.view.list(`${runtimeType}/`)) {
        const record = await this.get(runtimeType, name);
        if (record) records.push(record);
      }
    }
    return records;
  }
}
