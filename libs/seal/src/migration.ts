import { timingSafeEqual } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import type { Keyring, Physical } from '@svc/storage';
import { aeadDecrypt, aeadEncrypt } from './aead';
import { type RootKeyWrapper, SealUnavailableError } from './key-wrapper';
import type { KeySplit } from './key-split';
import type { RekeyTarget } from './rekey';
import {
  SEAL_STORAGE_KEYS,
  autoConfig,
  createSeal,
  readConfig,
  shamirConfig,
  type BuildInfo,
  type InitRequest,
  type InitResult,
  type Seal,
  type SealConfig,
  type SealStatus,
  type UnsealResult,
} from './seal';
import { combineShares } from './shamir';
import { UnsealProgress, type UnsealShares } from './shares';
import type { ShareVerifier } from './share-verifier';

/** Vault's answers when `migrate` does not match the service's state. */
export const MIGRATE_REQUIRED = "'migrate' parameter must be set true in JSON body when in seal migration mode";
export const MIGRATE_UNEXPECTED = "'migrate' parameter set true in JSON body when not in seal migration mode";

const SHAMIR = 'shamir';

/**
 * The seal a configuration names (`target`, opened by `targetWrapper`, or Shamir without one) and
 * the seal a migration starts from: `from`, the provider of the stanza marked `disabled`, or Shamir
 * when there is none. While storage still holds the old seal's root key the service is in
 * migration mode: it does not unseal itself, and `sys/unseal` with `migrate` takes the old seal's
 * shares (unseal shares from Shamir, recovery shares from an auto-unseal seal). The threshold-th
 * share re-protects the same root key with the new seal in one storage transaction, so the keyring
 * and every secret stay as they are; the shares keep their meaning for the operator (Shamir's unseal
 * shares become the recovery shares, recovery shares become Shamir's unseal shares). Every gateway
 * reads the mode from storage, so once one has migrated, the others are out of it too.
 */
export class MigratingSeal implements Seal {
  private readonly target: Seal;

  constructor(
    private readonly physical: Physical,
    private readonly build: BuildInfo,
    private readonly targetWrapper: RootKeyWrapper | undefined,
    private readonly from: RootKeyWrapper | undefined,
    /** Never in use at the same time as the target seal's: during a migration only this one takes shares. */
    private readonly progress: UnsealShares = new UnsealProgress(),
  ) {
    this.target = createSeal(physical, build, targetWrapper, progress);
  }

  get keyring(): Keyring | undefined {
    return this.target.keyring;
  }

  get recoverySeal(): boolean {
    return this.target.recoverySeal;
  }

  get authorityKeys(): RekeyTarget {
    return this.target.authorityKeys;
  }

  get rootKeyRotation(): RekeyTarget | undefined {
    return this.target.rootKeyRotation;
  }

  shareVerifier(): Promise<ShareVerifier> {
    return this.target.shareVerifier();
  }

  /** The stored config while it is the old seal's; undefined once migrated (or never initialized). */
  async pending(): Promise<SealConfig | undefined> {
    const stored = await readConfig(this.physical);
    const targetType = this.targetWrapper?.type ?? SHAMIR;
    return stored && stored.type !== targetType && stored.type === (this.from?.type ?? SHAMIR) ? stored : undefined;
  }

  /** During a migration: the old seal's type and the split of the shares it takes, with `migration: true`. */
  async status(): Promise<SealStatus> {
    const stored = await this.pending();
    if (!stored) return this.target.status();
    const split = splitOf(stored);
    return {
      type: stored.type,
      initialized: true,
      sealed: true,
      t: split.threshold,
      n: split.shares,
      ...(await this.progress.state()),
      version: this.build.version,
      build_date: this.build.buildDate,
      migration: true,
      recovery_seal: this.target.recoverySeal,
      storage_type: this.physical.kind,
    };
  }

  initialize(request: InitRequest): Promise<InitResult> {
    return this.target.initialize(request);
  }

  /**
   * Outside a migration, the target seal's unseal. During one, a share of the old seal's keys
   * (the caller has checked `migrate`); the threshold-th migrates and opens the new seal.
   */
  async submitUnsealKey(key: string | undefined, reset = false): Promise<UnsealResult> {
    const stored = await this.pending();
    if (!stored) return this.target.submitUnsealKey(key, reset);
    if (reset) {
      await this.progress.drop();
      return { status: await this.status() };
    }
    if (!key) throw ServiceError.badRequest('key is required unless reset is true');
    const shares = await this.progress.add(key, splitOf(stored));
    if (!shares) return { status: await this.status() };
    try {
      await this.migrate(stored, shares);
      return await this.openTarget(shares);
    } finally {
      shares.forEach((given) => given.fill(0));
    }
  }

  unsealAutomatically(): Promise<Keyring> {
    return this.target.unsealAutomatically();
  }

  async seal(): Promise<void> {
    await this.progress.drop();
    return this.target.seal();
  }

  persistKeyring(keyring: Keyring): Promise<void> {
    return this.target.persistKeyring(keyring);
  }

  get rootKeyFromPeers(): boolean {
    return this.target.rootKeyFromPeers;
  }

  rootKeyCopy(): Buffer | undefined {
    return this.target.rootKeyCopy();
  }

  adoptRootKey(rootKey: Buffer): Promise<void> {
    return this.target.adoptRootKey(rootKey);
  }

  reloadKeyring(): Promise<Keyring> {
    return this.target.reloadKeyring();
  }

  start(): void {
    this.target.start();
    this.from?.start();
  }

  close(): void {
    this.target.close();
    this.from?.close();
  }

  /**
   * Recovers the root key through the old seal (checking the shares against it), then stores it
   * protected by the new seal, in one transaction that first checks no other gateway migrated meanwhile.
   */
  private async migrate(stored: SealConfig, shares: Buffer[]): Promise<void> {
    const key = await combineShares(shares).catch(() => undefined);
    const rootKey = await this.recoverRootKey(stored, key).catch((err: unknown) => {
      key?.fill(0);
      throw err;
    });
    // `key` is now proven: the old unseal key, or the recovery key; it becomes the other.
    const verifiedKey = key as Buffer;
    try {
      const split = splitOf(stored);
      const fingerprints = 'secret_shares' in stored ? stored.pgp_fingerprints : stored.recovery_pgp_fingerprints;
      const config = this.targetWrapper ? autoConfig(this.targetWrapper.type, split, fingerprints) : shamirConfig(split, fingerprints);
      const sealedRootKey = this.targetWrapper
        ? await this.targetWrapper.wrap(rootKey).catch((err: unknown) => {
            throw unavailable(`the ${this.targetWrapper?.type} seal could not encrypt the root key`, err);
          })
        : aeadEncrypt(verifiedKey, rootKey, SEAL_STORAGE_KEYS.rootKey);
      await this.physical.transaction(async (tx) => {
        await tx.lock(SEAL_STORAGE_KEYS.config);
        if ((await readConfig(tx))?.type !== stored.type) throw ServiceError.badRequest('another gateway has already migrated the seal; this one follows it');
        await tx.put(SEAL_STORAGE_KEYS.config, Buffer.from(JSON.stringify(config), 'utf8'));
        await tx.put(SEAL_STORAGE_KEYS.rootKey, sealedRootKey);
        if (this.targetWrapper) await tx.put(SEAL_STORAGE_KEYS.recoveryKey, aeadEncrypt(rootKey, verifiedKey, SEAL_STORAGE_KEYS.recoveryKey));
        else await tx.delete(SEAL_STORAGE_KEYS.recoveryKey);
      });
    } finally {
      rootKey.fill(0);
      verifiedKey.fill(0);
    }
  }

  /** The root key: decrypted by the old unseal key (Shamir), or unwrapped by the old provider with the recovery key checked. */
  private async recoverRootKey(stored: SealConfig, key: Buffer | undefined): Promise<Buffer> {
    const sealedRootKey = await this.physical.get(SEAL_STORAGE_KEYS.rootKey);
    if (!sealedRootKey) throw new Error(`seal storage is incomplete: ${SEAL_STORAGE_KEYS.rootKey} is missing`);
    if (!this.from) {
      try {
        if (!key) throw new Error('shares could not be combined');
        return aeadDecrypt(key, sealedRootKey, SEAL_STORAGE_KEYS.rootKey);
      } catch {
        throw ServiceError.badRequest("the submitted key shares do not form this service's unseal key; progress has been reset");
      }
    }
    const rootKey = await this.from.unwrap(sealedRootKey).catch((err: unknown) => {
      throw unavailable(`the ${stored.type} seal being migrated from could not decrypt the root key`, err);
    });
    const sealedRecoveryKey = await this.physical.get(SEAL_STORAGE_KEYS.recoveryKey);
    if (!sealedRecoveryKey) throw new Error(`seal storage is incomplete: ${SEAL_STORAGE_KEYS.recoveryKey} is missing`);
    const recoveryKey = aeadDecrypt(rootKey, sealedRecoveryKey, SEAL_STORAGE_KEYS.recoveryKey);
    try {
      if (!key || key.length !== recoveryKey.length || !timingSafeEqual(key, recoveryKey)) {
        rootKey.fill(0);
        throw ServiceError.badRequest("the submitted recovery key shares do not form this service's recovery key; progress has been reset");
      }
      return rootKey;
    } finally {
      recoveryKey.fill(0);
    }
  }

  /** Opens the new seal as it opens from now on: through its provider, or with the same shares, now its unseal shares. */
  private async openTarget(shares: Buffer[]): Promise<UnsealResult> {
    if (this.targetWrapper) {
      const keyring = await this.target.unsealAutomatically();
      return { status: await this.target.status(), keyring };
    }
    let result: UnsealResult | undefined;
    for (const share of shares) result = await this.target.submitUnsealKey(share.toString('hex'));
    return result as UnsealResult;
  }
}

/** The split of the shares that open a stored seal: unseal shares (Shamir) or recovery shares. */
function splitOf(stored: SealConfig): KeySplit {
  return 'secret_shares' in stored
    ? { shares: stored.secret_shares, threshold: stored.secret_threshold }
    : { shares: stored.recovery_shares, threshold: stored.recovery_threshold };
}

/** A provider failure during a migration: 503 with the provider's message (which names no key material). */
function unavailable(what: string, err: unknown): ServiceError {
  const reason = err instanceof SealUnavailableError ? err.message : 'an unexpected error';
  return ServiceError.unavailable(`${what}: ${reason}; the migration did not happen and progress has been reset`);
}

/**
 * The seal a configuration names. With an auto-unseal seal, or with an old seal marked `disabled`,
 * it can be in migration mode (see MigratingSeal); a plain Shamir configuration never is.
 */
export function createConfiguredSeal(physical: Physical, build: BuildInfo, wrapper: RootKeyWrapper | undefined, disabled: RootKeyWrapper | undefined, progress?: UnsealShares): Seal {
  return wrapper || disabled ? new MigratingSeal(physical, build, wrapper, disabled, progress) : createSeal(physical, build, undefined, progress);
}
