import type { BackendFactory, EngineContext } from '@svc/engine-host';
import { Backend, type MountInfo } from '@svc/framework';
import { KeyStore, POLICY_PREFIX } from './key-store';
import { backupPaths } from './paths/backup';
import { certificatePaths } from './paths/certificates';
import { configPaths } from './paths/config';
import { encryptionPaths } from './paths/encryption';
import { exportPaths } from './paths/export';
import { generatePaths } from './paths/generate';
import { importPaths } from './paths/import';
import { keyPaths } from './paths/keys';
import { signingPaths } from './paths/signing';
import { rotateKey, type TransitServices } from './services';
import { KEYS_CONFIG_PATH, MountSettings } from './settings';
import { rotationDue } from './stored-key';
import { WrappingKey } from './wrapping';

const ROTATION_LOCK_TTL_MS = 60_000;

const HELP = `The transit engine encrypts, decrypts, signs and HMACs data with named keys it keeps, without
exposing the keys. Ciphertext has the form \`svc:v<version>:<base64>\`. Keys can be rotated (automatically
with \`auto_rotate_period\`), imported, exported when allowed, backed up and given certificates.`;

/** One backend per mount: its key cache and wrapping key live as long as the mount's backend. */
export const transitBackendFactory: BackendFactory = (mount: MountInfo, context: EngineContext) => {
  const { storage } = context;
  const keys = new KeyStore();
  const settings = new MountSettings();
  const services: TransitServices = { storage, keys, settings, wrappingKey: new WrappingKey() };

  /** Rotates every key whose auto_rotate_period has elapsed; one key's failure does not stop the others. */
  const rotateDueKeys = async (): Promise<void> => {
    for (const name of await keys.list(storage)) {
      try {
        const stored = await keys.readStored(storage, name);
        if (!stored || !rotationDue(stored, Date.now())) continue;
        await context.locks.withLock(`transit/${mount.uuid}/rotate/${name}`, ROTATION_LOCK_TTL_MS, async () => {
          // Re-check under the lock, from storage: another replica may have rotated it meanwhile.
          const current = await keys.readFromStorage(storage, name);
          if (current && rotationDue(current, Date.now())) await rotateKey(keys, storage, name);
        });
      } catch (err) {
        context.logger.error({ mount: mount.path, key: name, err: (err as Error).message }, 'automatic key rotation failed');
      }
    }
  };

  return new Backend({
    type: 'transit',
    help: HELP,
    // The framework tries patterns in order (no two overlap), so the data operations go first.
    paths: [
      ...encryptionPaths(services),
      ...signingPaths(services),
      ...generatePaths(services),
      ...keyPaths(services),
      ...importPaths(services),
      ...certificatePaths(services),
      ...exportPaths(services),
      ...backupPaths(services),
      ...configPaths(services),
    ],
    periodic: rotateDueKeys,
    // Another replica changed a key or the mount's settings: the next use reads them again, without
    // waiting out the cache's lease (which still bounds staleness should this message be lost).
    invalidate: (key) => {
      if (key.startsWith(POLICY_PREFIX)) keys.forget(key.slice(POLICY_PREFIX.length));
      else if (key === KEYS_CONFIG_PATH) settings.forget();
    },
  });
};
