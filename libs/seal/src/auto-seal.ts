import { randomBytes, timingSafeEqual } from 'node:crypto';
import { ServiceError, UNINITIALIZED_MESSAGE } from '@svc/api-contract';
import type { Keyring, Physical } from '@svc/storage';
import { aeadDecrypt, aeadEncrypt } from './aead';
import type { RootKeyWrapper } from './key-wrapper';
import { KeyringSeal, requireInteger, type OpenSeal, type PreparedRekey } from './keyring-seal';
import type { RekeyTarget } from './rekey';
import type { BuildInfo, InitRequest, InitResult, Seal, SealStatus, UnsealResult } from './seal-types';
import { autoConfig, readConfig, readSealedRootKey, writeKeyring, type AutoSealConfig } from './seal-storage';
import { combineShares, validateShareConfig } from './shamir';
import { pgpFingerprints } from './shares';
import { recoveryKeyDigest, type ShareVerifier } from './share-verifier';
import { SEAL_STORAGE_KEYS } from './storage-keys';

/**
 * An auto-unseal seal: a provider (`RootKeyWrapper`) protects the root key, so the service opens
 * itself. A recovery key, split into shares like Vault's, is stored under the root key; its shares
 * authorize generate-root and their own rekey, and never unseal.
 */
export class AutoSeal extends KeyringSeal implements Seal {
  readonly recoverySeal = true;
  readonly rootKeyFromPeers = false;
  /** The stored (provider-encrypted) root key that `open.rootKey` came from. */
  private openedFrom?: Buffer;

  constructor(
    physical: Physical,
    build: BuildInfo,
    private readonly wrapper: RootKeyWrapper,
  ) {
    super(physical, build);
  }

  async status(): Promise<SealStatus> {
    const config = await readConfig(this.physical);
    const split = config && 'recovery_shares' in config ? { shares: config.recovery_shares, threshold: config.recovery_threshold } : undefined;
    return { ...(await this.statusFields(this.wrapper.type, split, config !== null)), progress: 0, nonce: '', recovery_seal: true };
  }

  async initialize(request: InitRequest): Promise<InitResult> {
    await this.refuseReinitialize();
    if ((request.secret_shares ?? 1) !== 1 || (request.secret_threshold ?? 1) !== 1 || request.pgp_keys) {
      throw ServiceError.badRequest(`the ${this.wrapper.type} seal protects the root key itself: give recovery_shares and recovery_threshold, not secret_shares, secret_threshold or pgp_keys`);
    }
    const shares = requireInteger(request.recovery_shares, 'recovery_shares');
    const threshold = requireInteger(request.recovery_threshold, 'recovery_threshold');
    validateShareConfig(shares, threshold, 'recovery');
    const pgpKeys = request.recovery_pgp_keys ?? undefined;
    const config = autoConfig(this.wrapper.type, { shares, threshold }, await pgpFingerprints(pgpKeys, shares, 'recovery'));

    const { handedOut, keyring } = await this.createKeys({ shares, threshold }, pgpKeys, async (recoveryKey, rootKey, created) => {
      const recoveryEntry: [string, Buffer] = [SEAL_STORAGE_KEYS.recoveryKey, aeadEncrypt(rootKey, recoveryKey, SEAL_STORAGE_KEYS.recoveryKey)];
      await this.store(config, await this.wrapper.wrap(rootKey), rootKey, created, recoveryEntry);
    });
    return { keys: [], keys_base64: [], recovery_keys: handedOut.keys, recovery_keys_base64: handedOut.keys_base64, keyring };
  }

  async submitUnsealKey(_key?: string): Promise<UnsealResult> {
    throw ServiceError.badRequest(`this service uses the ${this.wrapper.type} seal and unseals itself; recovery keys cannot unseal`);
  }

  /** Asks the provider for the root key and opens the keyring; a provider failure is a SealUnavailableError. */
  unsealAutomatically(): Promise<Keyring> {
    return this.exclusive(async () => (this.open ?? (await this.openThroughProvider())).keyring);
  }

  /** Runs inside `exclusive`. */
  private async openThroughProvider(): Promise<OpenSeal> {
    const config = await readConfig(this.physical);
    if (!config) throw ServiceError.badRequest(UNINITIALIZED_MESSAGE);
    if (config.type !== this.wrapper.type) {
      throw new Error(`storage was initialized with the ${config.type} seal but the configuration names the ${this.wrapper.type} seal; to migrate, add the ${config.type} seal's stanza marked disabled = "true"`);
    }
    const sealedRootKey = await readSealedRootKey(this.physical);
    this.open = await this.openWith(await this.wrapper.unwrap(sealedRootKey));
    this.openedFrom = sealedRootKey;
    return this.open;
  }

  start(): void {
    this.wrapper.start();
  }

  close(): void {
    this.wrapper.close();
  }

  /**
   * The recovery key as a rekey target: its shares are checked against the stored key (which needs
   * the seal open, as these operations do), and a new one is stored under the root key.
   */
  readonly authorityKeys: RekeyTarget = {
    split: async () => {
      const config = await readConfig(this.physical);
      if (!config || !('recovery_shares' in config)) throw ServiceError.badRequest(UNINITIALIZED_MESSAGE);
      return { shares: config.recovery_shares, threshold: config.recovery_threshold };
    },
    verify: (shares) => this.exclusive(() => this.checkRecoveryShares(shares)),
    prepare: (shares, newKey, split, fingerprints) =>
      this.exclusive(async () => {
        await this.checkRecoveryShares(shares);
        const prepared: PreparedRekey<AutoSealConfig> = {
          config: autoConfig(this.wrapper.type, split, fingerprints),
          sealedKey: aeadEncrypt((await this.inForce()).rootKey, newKey, SEAL_STORAGE_KEYS.recoveryKey).toString('base64'),
        };
        return JSON.stringify(prepared);
      }),
    install: (text) => this.installRekey(text, SEAL_STORAGE_KEYS.recoveryKey),
  };

  /**
   * Vault's `sys/rekey` with an auto-unseal seal: a threshold of recovery shares authorizes a new
   * root key, which the provider encrypts; the keyring and the recovery key are stored again under
   * it. Nothing is handed out, and the keyring (the data's keys) stays.
   */
  readonly rootKeyRotation: RekeyTarget = {
    split: this.authorityKeys.split,
    verify: this.authorityKeys.verify,
    storesNewKey: true,
    prepare: (shares) => this.exclusive(async () => this.checkRecoveryShares(shares)).then(() => ''),
    install: () => this.exclusive(() => this.rotateRootKey()),
  };

  /** The recovery key's verifier: its digest. */
  shareVerifier(): Promise<ShareVerifier> {
    return this.exclusive(async () => {
      const split = await this.authorityKeys.split();
      const recoveryKey = await this.storedRecoveryKey();
      try {
        return { kind: 'recovery', ...split, check: recoveryKeyDigest(recoveryKey).toString('base64') };
      } finally {
        recoveryKey.fill(0);
      }
    });
  }

  protected async dropProgress(): Promise<void> {
    this.openedFrom = undefined;
  }

  /** A peer may have rotated the root key: when the stored one is not the one this process opened with, ask the provider for it. */
  protected override async inForce(): Promise<OpenSeal> {
    // A gateway unsealed by a peer's keyring hand-off holds no root key yet: the provider gives it.
    if (!this.open) return this.openThroughProvider();
    const open = this.open;
    const stored = await readSealedRootKey(this.physical);
    if (this.openedFrom && !stored.equals(this.openedFrom)) {
      const rootKey = await this.wrapper.unwrap(stored);
      open.rootKey.fill(0);
      open.rootKey = rootKey;
      this.openedFrom = stored;
    }
    return open;
  }

  private async rotateRootKey(): Promise<void> {
    const open = await this.inForce();
    const sealedRecoveryKey = await this.physical.get(SEAL_STORAGE_KEYS.recoveryKey);
    if (!sealedRecoveryKey) throw new Error(`seal storage is incomplete: ${SEAL_STORAGE_KEYS.recoveryKey} is missing`);
    const recoveryKey = aeadDecrypt(open.rootKey, sealedRecoveryKey, SEAL_STORAGE_KEYS.recoveryKey);
    const rootKey = randomBytes(32);
    try {
      const sealedRootKey = await this.wrapper.wrap(rootKey);
      await this.physical.transaction(async (tx) => {
        await tx.lock(SEAL_STORAGE_KEYS.config);
        await tx.put(SEAL_STORAGE_KEYS.rootKey, sealedRootKey);
        await tx.put(SEAL_STORAGE_KEYS.recoveryKey, aeadEncrypt(rootKey, recoveryKey, SEAL_STORAGE_KEYS.recoveryKey));
        await writeKeyring(tx, rootKey, open.keyring);
      });
      open.rootKey.fill(0);
      open.rootKey = Buffer.from(rootKey);
      this.openedFrom = sealedRootKey;
    } finally {
      rootKey.fill(0);
      recoveryKey.fill(0);
    }
  }

  /** The recovery key, decrypted with the root key in force (runs inside `exclusive`); the caller zeroes it. */
  private async storedRecoveryKey(): Promise<Buffer> {
    const { rootKey } = await this.inForce();
    const sealed = await this.physical.get(SEAL_STORAGE_KEYS.recoveryKey);
    if (!sealed) throw new Error(`seal storage is incomplete: ${SEAL_STORAGE_KEYS.recoveryKey} is missing`);
    return aeadDecrypt(rootKey, sealed, SEAL_STORAGE_KEYS.recoveryKey);
  }

  /** A 400 unless the shares rebuild this service's recovery key. */
  private async checkRecoveryShares(shares: Buffer[]): Promise<void> {
    const stored = await this.storedRecoveryKey();
    const given = await combineShares(shares).catch(() => undefined);
    try {
      if (!given || given.length !== stored.length || !timingSafeEqual(given, stored)) {
        throw ServiceError.badRequest('the submitted recovery key shares do not form this service\'s recovery key; progress has been reset');
      }
    } finally {
      given?.fill(0);
      stored.fill(0);
    }
  }
}
