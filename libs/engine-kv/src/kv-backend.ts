import type { BackendFactory } from '@svc/engine-host';
import {
  Backend,
  type BackendDeclaration,
  type HelpResponse,
  type MountInfo,
  type PathOperation,
  type Request,
  type Response,
  type ResolvedOperation,
  type DocumentedRoute,
} from '@svc/framework';
import { ServiceError } from '@svc/http';
import { systemClock, type Clock } from './clock';
import { passthroughPaths } from './v1/passthrough-paths';
import { configPaths } from './v2/config-paths';
import { dataPaths } from './v2/data-paths';
import { metadataPaths } from './v2/metadata-paths';
import { subkeysPaths } from './v2/subkeys-paths';
import { isUpgraded, upgradeToVersioned } from './v2/upgrade';
import { versionPaths } from './v2/version-paths';

export type KvVersion = 1 | 2;

/** The kv version a mount asks for in `options.version`; absent means 1, as in Vault. */
export function mountKvVersion(mount: Pick<MountInfo, 'options'>): KvVersion {
  const option = mount.options.version ?? '';
  if (option === '' || option === '1') return 1;
  if (option === '2') return 2;
  throw ServiceError.badRequest(
    `unsupported kv version ${JSON.stringify(option)} in the mount options; use "1" or "2"`,
  );
}

const HELP =
  'The key/value secrets engine stores secrets in the service\'s encrypted storage. Version 1 keeps one ' +
  'value per path; version 2 keeps versions with metadata, check-and-set and soft deletion ' +
  '(paths `data/`, `metadata/`, `delete/`, `undelete/`, `destroy/`, `subkeys/`, `config`).';

export function kvDeclaration(version: KvVersion, clock: Clock = systemClock): BackendDeclaration {
  const paths =
    version === 1
      ? [passthroughPaths()]
      : [
          configPaths(),
          dataPaths(clock),
          subkeysPaths(clock),
          ...metadataPaths(clock),
          ...versionPaths(clock),
        ];
  return { type: 'kv', help: HELP, paths };
}

export interface KvBackendOptions {
  clock?: Clock;
}

/**
 * One kv mount. The version comes from the mount options of each request, since tuning a mount
 * to version 2 upgrades it in place: the first version 2 request moves the stored version 1 data
 * to the versioned layout. Going back to version 1 afterwards is refused, as in Vault.
 */
export class KvBackend extends Backend {
  private readonly engines: Record<KvVersion, Backend>;
  private readonly clock: Clock;
  /** The version of the latest request, for help and OpenAPI, which come without mount options. */
  private version: KvVersion;
  /** Once upgraded a mount stays upgraded, so this is safe to remember. */
  private upgraded = false;

  constructor(mount: MountInfo, options: KvBackendOptions = {}) {
    const version = mountKvVersion(mount);
    const clock = options.clock ?? systemClock;
    // The base keeps the declaration the mount was created with (its type and paths); requests go
    // to the engine of the version they carry.
    super(kvDeclaration(version, clock));
    this.clock = clock;
    this.version = version;
    this.engines = { 1: new Backend(kvDeclaration(1, clock)), 2: new Backend(kvDeclaration(2, clock)) };
  }

  override async handle(req: Request): Promise<Response | undefined> {
    const version = mountKvVersion(req.mount);
    this.version = version;
    if (version === 2) await this.upgrade(req);
    else await this.refuseDowngrade(req);
    return this.engines[version].handle(req);
  }

  override operationInfo(path: string, operation: PathOperation): ResolvedOperation | null {
    return this.engines[this.version].operationInfo(path, operation);
  }

  override help(relativePath: string): HelpResponse {
    return this.engines[this.version].help(relativePath);
  }

  override describeRoutes(relativePath: string): DocumentedRoute[] {
    return this.engines[this.version].describeRoutes(relativePath);
  }

  private async upgrade(req: Request): Promise<void> {
    if (this.upgraded) return;
    await upgradeToVersioned(req.storage, this.clock());
    this.upgraded = true;
  }

  private async refuseDowngrade(req: Request): Promise<void> {
    if (!this.upgraded) this.upgraded = await isUpgraded(req.storage);
    if (this.upgraded) {
      throw ServiceError.badRequest(
        'this kv mount was upgraded to version 2 and cannot be used as version 1; ' +
          'downgrading is not supported: tune the mount back to options version "2"',
      );
    }
  }
}

export const kvBackendFactory: BackendFactory = (mount) => new KvBackend(mount);
