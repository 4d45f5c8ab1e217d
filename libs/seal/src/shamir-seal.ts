import { ServiceError, UNINITIALIZED_MESSAGE } from '@svc/api-contract';
import type { Keyring, Physical } from '@svc/storage';
import { aeadDecrypt, aeadEncrypt } from './aead';
import { KeyringSeal, requireInteger, type PreparedRekey } from './keyring-seal';
import type { RekeyTarget } from './rekey';
import type { BuildInfo, InitRequest, InitResult, Seal, SealStatus, UnsealResult } from './seal-types';
import { readSealedRootKey, readShamirConfig, shamirConfig, type ShamirSealConfig } from './seal-storage';
import { combineShares, validateShareConfig } from './shamir';
import { UnsealProgress, pgpFingerprints, type UnsealShares } from './shares';
import type { ShareVerifier } from './share-verifier';
import { SEAL_STORAGE_KEYS } from './storage-keys';

/**
 * The Shamir seal: an unseal key split into shares decrypts the root key, which decrypts the
 * keyring.
 */
export class ShamirSeal extends KeyringSeal implements Seal {
  readonly recoverySeal = false;
  readonly rootKeyRotation = undefined;
  readonly rootKeyFromPeers = true;

  constructor(
    physical: Physical,
    build: BuildInfo,
    private readonly progress: UnsealShares = new UnsealProgress(),
  ) {
    super(physical, build);
  }

  async status(): Promise<SealStatus> {
    const config = await readShamirConfig(this.physical);
    const split = config && { shares: config.secret_shares, threshold: config.secret_threshold };
    return {
      ...(await this.statusFields('shamir', split ?? undefined, config !== null)),
      ...(await this.progress.state()),
      recovery_seal: false,
    };
  }

  async initialize(request: InitRequest): Promise<InitResult> {
    await this.refuseReinitialize();
    if (request.recovery_shares !== undefined || request.recovery_threshold !== undefined || request.recovery_pgp_keys) {
      throw ServiceError.badRequest('recovery_shares, recovery_threshold and recovery_pgp_keys need an auto-unseal seal; the shamir seal has unseal keys only');
    }
    const shares = requireInteger(request.secret_shares, 'secret_shares');
    const threshold = requireInteger(request.secret_threshold, 'secret_threshold');
    validateShareConfig(shares, threshold);
    const pgpKeys = request.pgp_keys ?? undefined;
    const config = shamirConfig({ shares, threshold }, await pgpFingerprints(pgpKeys, shares));

    const { handedOut, keyring } = await this.createKeys({ shares, threshold }, pgpKeys, (unsealKey, rootKey, created) =>
      this.store(config, aeadEncrypt(unsealKey, rootKey, SEAL_STORAGE_KEYS.rootKey), rootKey, created),
    );
    return { ...handedOut, keyring };
  }

  /**
   * `key` is a share in hex or base64; `reset` discards the shares given so far (the key is then
   * ignored). Wrong shares are detected when the reconstructed key fails to decrypt the root key;
   * progress then starts over.
   */
  submitUnsealKey(key: string | undefined, reset = false): Promise<UnsealResult> {
    return this.exclusive(async () => {
      if (reset) {
        await this.dropProgress();
        return { status: await this.status() };
      }
      const config = await readShamirConfig(this.physical);
      if (!config) throw ServiceError.badRequest(UNINITIALIZED_MESSAGE);
      if (this.open) return this.result();
      if (!key) throw ServiceError.badRequest('key is required unless reset is true');

      const shares = await this.progress.add(key, { shares: config.secret_shares, threshold: config.secret_threshold });
      if (!shares) return this.result();

      const unsealKey = await combineShares(shares).catch(() => undefined);
      shares.forEach((share) => share.fill(0));
      try {
        this.open = await this.openWith(await this.decryptRootKey(unsealKey));
      } finally {
        unsealKey?.fill(0);
      }
      return this.result();
    });
  }

  unsealAutomatically(): Promise<Keyring> {
    throw new Error('the shamir seal unseals with unseal keys only');
  }

  start(): void {
    // Nothing runs in the background.
  }

  close(): void {
    // Nothing runs in the background.
  }

  /**
   * The unseal key as a rekey target: shares of the current key prove the right to replace it, and
   * the root key is re-encrypted under the new one. The keyring is untouched.
   */
  readonly authorityKeys: RekeyTarget = {
    split: async () => {
      const config = await readShamirConfig(this.physical);
      if (!config) throw ServiceError.badRequest(UNINITIALIZED_MESSAGE);
      return { shares: config.secret_shares, threshold: config.secret_threshold };
    },
    verify: (shares) =>
      this.exclusive(async () => {
        (await this.recoverRootKey(shares)).fill(0);
      }),
    prepare: (shares, newKey, split, fingerprints) =>
      this.exclusive(async () => {
        const rootKey = await this.recoverRootKey(shares);
        try {
          const prepared: PreparedRekey<ShamirSealConfig> = {
            config: shamirConfig(split, fingerprints),
            sealedKey: aeadEncrypt(newKey, rootKey, SEAL_STORAGE_KEYS.rootKey).toString('base64'),
          };
          return JSON.stringify(prepared);
        } finally {
          rootKey.fill(0);
        }
      }),
    install: (text) => this.installRekey(text, SEAL_STORAGE_KEYS.rootKey),
  };

  /** The unseal key's verifier: the stored root key entry, which only the unseal key decrypts. */
  shareVerifier(): Promise<ShareVerifier> {
    return this.exclusive(async () => ({ kind: 'unseal', ...(await this.authorityKeys.split()), check: (await readSealedRootKey(this.physical)).toString('base64') }));
  }

  protected dropProgress(): Promise<void> {
    return this.progress.drop();
  }

  /** The root key, when `unsealKey` is this service's unseal key; a 400 otherwise. */
  private async decryptRootKey(unsealKey: Buffer | undefined): Promise<Buffer> {
    const sealedRootKey = await readSealedRootKey(this.physical);
    try {
      if (!unsealKey) throw new Error('shares could not be combined');
      return aeadDecrypt(unsealKey, sealedRootKey, SEAL_STORAGE_KEYS.rootKey);
    } catch {
      throw ServiceError.badRequest('the submitted key shares do not form this service\'s unseal key; progress has been reset');
    }
  }

  /** The root key rebuilt from unseal shares (a 400 when they are not this service's); the caller zeroes it. */
  private async recoverRootKey(shares: Buffer[]): Promise<Buffer> {
    const unsealKey = await combineShares(shares).catch(() => undefined);
    try {
      return await this.decryptRootKey(unsealKey);
    } finally {
      unsealKey?.fill(0);
    }
  }

  private async result(): Promise<UnsealResult> {
    return { status: await this.status(), ...(this.open && { keyring: this.open.keyring }) };
  }
}
