import type { BackendFactory } from '@svc/engine-host';
import { Backend, type BackendDeclaration, type MountInfo } from '@svc/framework';
import type { StorageView } from '@svc/storage';
import { ServiceError } from '@svc/api-contract';
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

export function kvDeclaration(version: KvVersion, storage: StorageView, clock: Clock = systemClock): BackendDeclaration {
  const paths =
    version === 1
      ? [passthroughPaths(storage)]
      : [
          configPaths(storage),
          dataPaths(storage, clock),
          subkeysPaths(storage, clock),
          ...metadataPaths(storage, clock),
          ...versionPaths(storage, clock),
        ];
  return { type: 'kv', help: HELP, paths };
}

/**
 * One kv mount at the version its options name; the engine host builds it anew when a tune changes
 * them. Tuning a version 1 mount to version 2 upgrades it in place: initializing the version 2
 * backend moves the stored version 1 data to the versioned layout. Going back to version 1
 * afterwards is refused, as in Vault.
 */
export function createKvBackend(mount: MountInfo, storage: StorageView, clock: Clock = systemClock): Backend {
  const version = mountKvVersion(mount);
  return new Backend({
    ...kvDeclaration(version, storage, clock),
    initialize: version === 2 ? () => upgradeToVersioned(storage, clock()) : () => refuseDowngrade(storage),
  });
}

async function refuseDowngrade(storage: StorageView): Promise<void> {
  if (await isUpgraded(storage)) {
    throw ServiceError.badRequest(
      'this kv mount was upgraded to version 2 and cannot be used as version 1; ' +
        'downgrading is not supported: tune the mount back to options version "2"',
    );
  }
}

export const kvBackendFactory: BackendFactory = (mount, context) => createKvBackend(mount, context.storage);
