import { constants } from 'node:fs';
import { access, realpath, stat } from 'node:fs/promises';
import * as path from 'node:path';
import type { Logger } from 'pino';
import { PluginHost, verifyPluginBinary, type EngineRegistry, type PluginLaunch } from '@svc/engine-host';
import type { MountInfo } from '@svc/framework';
import { ServiceError, VERSION } from '@svc/api-contract';
import { createView, type Barrier } from '@svc/storage';
import { canonicalVersion, PluginCatalog, RuntimeCatalog, type PluginRecord, type PluginType } from './catalog';

/** The version every built-in engine and auth method reports, as Vault's `v<version>+builtin.vault`. */
export const BUILTIN_VERSION = `v${VERSION}+builtin.svc`;

/** A plugin built into this server: its engines and auth methods, and the database engine's plugins. */
export interface BuiltinPlugin {
  name: string;
  type: PluginType;
  version: string;
}

/** What a mount runs: a built-in type, or the external plugin of a catalog registration. */
export interface MountPlugin {
  external: boolean;
  version: string;
}

/**
 * The catalogs (plugins and plugin runtimes) and the host that runs the external plugins of this
 * gateway's mounts. Commands live in the configured `plugin_directory`; a registration's sha256 is
 * checked when it is registered and every time the plugin starts.
 */
export class Plugins {
  readonly catalog: PluginCatalog;
  readonly runtimes: RuntimeCatalog;
  readonly host: PluginHost;

  constructor(
    barrier: Barrier,
    private readonly engines: EngineRegistry,
    private readonly databasePlugins: readonly { name: string; version: string }[],
    private readonly pluginDirectory: string | undefined,
    logger: Logger,
    requestTimeoutMs: number,
  ) {
    this.catalog = new PluginCatalog(createView(barrier, 'core/plugin-catalog/'));
    this.runtimes = new RuntimeCatalog(createView(barrier, 'core/plugin-runtime-catalog/'));
    this.host = new PluginHost(barrier, (mount) => this.launchOf(mount), logger, { requestTimeoutMs });
  }

  builtins(): BuiltinPlugin[] {
    return [
      ...this.engines.mountable('auth').map((name) => ({ name, type: 'auth' as const, version: BUILTIN_VERSION })),
      ...this.databasePlugins.map(({ name, version }) => ({ name, type: 'database' as const, version })),
      ...this.engines.mountable('secret').map((name) => ({ name, type: 'secret' as const, version: BUILTIN_VERSION })),
    ];
  }

  builtin(type: PluginType, name: string): BuiltinPlugin | undefined {
    return this.builtins().find((plugin) => plugin.type === type && plugin.name === name);
  }

  /**
   * Which plugin a new mount of `name` runs, as Vault chooses: the version asked for (a catalog
   * registration, or the built-in's own version), else the unversioned registration, else the
   * built-in. Undefined when there is neither.
   */
  async forMount(type: PluginType, name: string, requestedVersion: string): Promise<MountPlugin | undefined> {
    const builtin = this.builtin(type, name);
    if (requestedVersion !== '' && builtin?.version === requestedVersion) return { external: false, version: '' };
    const version = canonicalVersion(requestedVersion);
    if (await this.catalog.get(type, name, version)) return { external: true, version };
    if (version !== '') throw ServiceError.badRequest(`plugin "${name}" version ${version} is not in the ${type} plugin catalog`);
    return builtin ? { external: false, version: '' } : undefined;
  }

  /** What a mount of this type may name: the built-ins and the registered plugins, sorted. */
  async mountable(type: PluginType): Promise<string[]> {
    const builtins = this.builtins().filter((plugin) => plugin.type === type).map((plugin) => plugin.name);
    return [...new Set([...builtins, ...(await this.catalog.names(type))])].sort();
  }

  /**
   * Checks a registration before it is stored: a command must be an executable inside the plugin
   * directory whose sha256 is the one given; an OCI image must name a runtime that exists.
   */
  async validate(record: PluginRecord): Promise<void> {
    if (record.runtime !== '' && record.oci_image === '') throw ServiceError.badRequest('runtime can only be set together with oci_image');
    if (record.runtime !== '' && !(await this.runtimes.get('container', record.runtime))) {
      throw ServiceError.badRequest(`runtime "${record.runtime}" is not in the plugin runtime catalog (sys/plugins/runtimes/catalog/container/${record.runtime})`);
    }
    if (record.oci_image !== '') return; // the sha256 is the image's; only a container runtime could check it
    await verifyPluginBinary(await this.launchFor(record));
  }

  /** How to start the plugin a mount runs, from its catalog registration as it is now. */
  async launchOf(mount: MountInfo): Promise<PluginLaunch> {
    // Only secrets engines run as external plugins here (sys/mounts).
    const type: PluginType = 'secret';
    const record = await this.catalog.get(type, mount.type, mount.plugin_version ?? '');
    if (!record) {
      throw ServiceError.badRequest(`plugin "${mount.type}"${mount.plugin_version ? ` version ${mount.plugin_version}` : ''} is no longer in the ${type} plugin catalog`);
    }
    return this.launchFor(record);
  }

  private async launchFor(record: PluginRecord): Promise<PluginLaunch> {
    if (record.oci_image !== '') {
      throw ServiceError.badRequest(
        `unable to run containerized plugin "${record.name}" (oci_image ${record.oci_image}): this server has no container runtime; register the plugin with a command in plugin_directory instead`,
      );
    }
    return { name: record.name, command: await this.commandPath(record), args: record.args, env: record.env, sha256: record.sha256 };
  }

  /** The command's real path, which must be a file inside the plugin directory (symbolic links resolved). */
  private async commandPath(record: PluginRecord): Promise<string> {
    if (!this.pluginDirectory) throw ServiceError.badRequest(`cannot run plugin "${record.name}": the server has no plugin_directory configured`);
    if (path.isAbsolute(record.command) || record.command.split(/[\\/]/).includes('..')) {
      throw ServiceError.badRequest(`command "${record.command}" must be a path relative to the plugin directory, without ".."`);
    }
    let directory: string;
    let command: string;
    try {
      directory = await realpath(this.pluginDirectory);
      command = await realpath(path.join(directory, record.command));
    } catch {
      throw ServiceError.badRequest(`plugin "${record.name}": command "${record.command}" does not exist in the plugin directory`);
    }
    if (!command.startsWith(directory + path.sep)) throw ServiceError.badRequest(`plugin "${record.name}": command "${record.command}" leads outside the plugin directory`);
    const isFile = (await stat(command)).isFile();
    const executable = await access(command, constants.X_OK).then(
      () => true,
      () => false,
    );
    if (!isFile || !executable) throw ServiceError.badRequest(`plugin "${record.name}": command "${record.command}" is not an executable file`);
    return command;
  }
}
