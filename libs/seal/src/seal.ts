import { randomBytes, timingSafeEqual } from 'node:crypto';
import { ServiceError, UNINITIALIZED_MESSAGE } from '@svc/http';
import { Keyring, type KeyValueStore, type Physical } from '@svc/storage';
import { aeadDecrypt, aeadEncrypt } from './aead';
import type { RootKeyWrapper } from './key-wrapper';
import type { KeySplit, RekeyTarget } from './rekey';
import { UNSEAL_KEY_BYTES, combineShares, splitKey, validateShareConfig } from './shamir';
import { UnsealProgress, handOutShares, pgpFingerprints, type HandedOutShares, type UnsealShares } from './shares';
import { recoveryKeyDigest, type ShareVerifier } from './share-verifier';
import { SEAL_STORAGE_KEYS } from './storage-keys';

export { SEAL_STORAGE_KEYS };

/** Body of `sys/seal-status` (and of `sys/unseal` answers). */
export interface SealStatus {
  /** `shamir`, or the auto-unseal seal's type. */
  type: string;
  initialized: boolean;
  sealed: boolean;
  /** Threshold and number of the unseal shares, or of the recovery shares with an auto-unseal seal. */
  t: number;
  n: number;
  progress: number;
  nonce: string;
  version: string;
  build_date: string;
  migration: boolean;
  recovery_seal: boolean;
  storage_type: string;
}

export interface InitRequest {
  secret_shares?: number;
  secret_threshold?: number;
  /** base64 PGP public keys, one per share, in share order. */
  pgp_keys?: string[] | null;
  recovery_shares?: number;
  recovery_threshold?: number;
  recovery_pgp_keys?: string[] | null;
}

export interface InitResult {
  /** Hex of each share, or of each PGP-encrypted share when `pgp_keys` was given. */
  keys: string[];
  keys_base64: string[];
  /** The recovery shares of an auto-unseal seal, handed out as `keys` are. */
  recovery_keys?: string[];
  recovery_keys_base64?: string[];
  /** The new keyring, so the caller can write initial data (root token, mounts) through the barrier. */
  keyring: Keyring;
}

export interface UnsealResult {
  status: SealStatus;
  /** Present once the threshold was reached and the seal is open. */
  keyring?: Keyring;
}

export interface BuildInfo {
  version: string;
  buildDate: string;
}

/**
 * What the gateway's core needs of a seal, Shamir or auto-unseal. Key material lives only in the
 * seal object's memory and only while unsealed; each process unseals on its own, as each Vault
 * node does.
 */
export interface Seal {
  readonly keyring: Keyring | undefined;
  /** True for an auto-unseal seal: it unseals with `unsealAutomatically`, and recovery keys authorize. */
  readonly recoverySeal: boolean;
  status(): Promise<SealStatus>;
  /** Creates the keys and stores them; the seal stays sealed afterwards. */
  initialize(request: InitRequest): Promise<InitResult>;
  /** One step of `sys/unseal`. */
  submitUnsealKey(key: string | undefined, reset?: boolean): Promise<UnsealResult>;
  /** Opens an auto-unseal seal through its provider; a Shamir seal refuses. */
  unsealAutomatically(): Promise<Keyring>;
  /** The keys whose shares authorize generate-root: the unseal keys, or the recovery keys. */
  readonly authorityKeys: RekeyTarget;
  /** An auto-unseal seal's `sys/rekey`: recovery shares authorize a new root key, kept by the provider. */
  readonly rootKeyRotation: RekeyTarget | undefined;
  /** What checks `authorityKeys`' shares elsewhere (a DR secondary), opening nothing by itself; needs the seal open. */
  shareVerifier(): Promise<ShareVerifier>;
  seal(): Promise<void>;
  persistKeyring(keyring: Keyring): Promise<void>;
  reloadKeyring(): Promise<Keyring>;
  /**
   * Whether a gateway that followed a peer's unseal must be handed the root key to store a new
   * keyring (a Shamir seal: only shares open it); an auto-unseal seal asks its provider instead.
   */
  readonly rootKeyFromPeers: boolean;
  /** A copy of the root key while open, for such a peer (the caller wipes it); undefined while sealed. */
  rootKeyCopy(): Buffer | undefined;
  /** Opens with a root key a peer handed over, refused unless it opens the stored keyring; a no-op when open. */
  adoptRootKey(rootKey: Buffer): Promise<void>;
  /** Starts background work (an auto-unseal provider's token renewal). */
  start(): void;
  /** Stops background work. */
  close(): void;
}

export interface ShamirSealConfig {
  type: 'shamir';
  secret_shares: number;
  secret_threshold: number;
  pgp_fingerprints?: string[];
}

/** An auto-unseal seal's config: the split of its recovery key. */
export interface AutoSealConfig {
  type: string;
  recovery_shares: number;
  recovery_threshold: number;
  recovery_pgp_fingerprints?: string[];
}

/** What `core/seal-config` holds. */
export type SealConfig = ShamirSealConfig | AutoSealConfig;

/** A rekey waiting for verification: what `install` will store. */
interface PreparedRekey<Config> {
  config: Config;
  /** The new key's protected form (base64): the root key under the unseal key, or the recovery key under the root key. */
  sealedKey: string;
}

interface OpenSeal {
  rootKey: Buffer;
  keyring: Keyring;
}

const ALREADY_INITIALIZED = 'service is already initialized';

/** What every seal does the same way once it holds the root key: the keyring and its storage. */
abstract class KeyringSeal {
  protected open?: OpenSeal;
  /** Serializes state changes so concurrent calls cannot interleave. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    protected readonly physical: Physical,
    protected readonly build: BuildInfo,
  ) {}

  get keyring(): Keyring | undefined {
    return this.open?.keyring;
  }

  /** Drops all key material held in memory, and any unseal progress. */
  seal(): Promise<void> {
    return this.exclusive(async () => {
      this.open?.rootKey.fill(0);
      this.open = undefined;
      await this.dropProgress();
    });
  }

  /** Stores a changed keyring (after `sys/rotate`) under the root key and makes it current. */
  persistKeyring(keyring: Keyring): Promise<void> {
    return this.exclusive(async () => {
      const open = await this.inForce();
      await writeKeyring(this.physical, open.rootKey, keyring);
      open.keyring = keyring;
    });
  }

  rootKeyCopy(): Buffer | undefined {
    return this.open && Buffer.from(this.open.rootKey);
  }

  adoptRootKey(rootKey: Buffer): Promise<void> {
    return this.exclusive(async () => {
      if (this.open) return;
      try {
        this.open = await this.openWith(Buffer.from(rootKey));
      } catch {
        throw new Error('the root key a peer handed over does not open the stored keyring');
      }
    });
  }

  /** Re-reads the stored keyring, for a process whose peer rotated it. */
  reloadKeyring(): Promise<Keyring> {
    return this.exclusive(async () => {
      const open = await this.inForce();
      open.keyring = await readKeyring(this.physical, open.rootKey);
      return open.keyring;
    });
  }

  protected abstract dropProgress(): Promise<void>;

  protected async statusFields(type: string, split: KeySplit | undefined, initialized: boolean): Promise<Omit<SealStatus, 'progress' | 'nonce' | 'recovery_seal'>> {
    return {
      type,
      initialized,
      sealed: this.open === undefined,
      t: split?.threshold ?? 0,
      n: split?.shares ?? 0,
      version: this.build.version,
      build_date: this.build.buildDate,
      migration: false,
      storage_type: this.physical.kind,
    };
  }

  /** Stores a new seal's config, its protected root key and the keyring, once. */
  protected async store(config: SealConfig, sealedRootKey: Buffer, rootKey: Buffer, keyring: Keyring, extra?: [string, Buffer]): Promise<void> {
    await this.physical.transaction(async (tx) => {
      await tx.lock(SEAL_STORAGE_KEYS.config);
      if (await readConfig(tx)) throw ServiceError.badRequest(ALREADY_INITIALIZED);
      await tx.put(SEAL_STORAGE_KEYS.config, Buffer.from(JSON.stringify(config), 'utf8'));
      await tx.put(SEAL_STORAGE_KEYS.rootKey, sealedRootKey);
      if (extra) await tx.put(...extra);
      await writeKeyring(tx, rootKey, keyring);
    });
  }

  /**
   * Creates a root key, a keyring and a key split into shares (handed out, PGP-encrypted if asked);
   * `store` writes them, and the key material is wiped afterwards whatever happens.
   */
  protected async createKeys(
    split: KeySplit,
    pgpKeys: string[] | undefined,
    store: (splitKey: Buffer, rootKey: Buffer, keyring: Keyring) => Promise<void>,
  ): Promise<{ handedOut: HandedOutShares; keyring: Keyring }> {
    const key = randomBytes(UNSEAL_KEY_BYTES);
    const rootKey = randomBytes(32);
    const keyring = Keyring.generate();
    const shares = await splitKey(key, split.shares, split.threshold);
    try {
      const handedOut = await handOutShares(shares, pgpKeys);
      await store(key, rootKey, keyring);
      return { handedOut, keyring };
    } finally {
      for (const secret of [key, rootKey, ...shares]) secret.fill(0);
    }
  }

  protected async refuseReinitialize(): Promise<void> {
    if (await readConfig(this.physical)) throw ServiceError.badRequest(ALREADY_INITIALIZED);
  }

  /** Stores a verified rekey: the new config and the new key's protected form, at `keyName`. */
  protected installRekey(text: string, keyName: string): Promise<void> {
    return this.exclusive(async () => {
      const prepared = JSON.parse(text) as PreparedRekey<SealConfig>;
      await this.physical.transaction(async (tx) => {
        await tx.lock(SEAL_STORAGE_KEYS.config);
        await tx.put(SEAL_STORAGE_KEYS.config, Buffer.from(JSON.stringify(prepared.config), 'utf8'));
        await tx.put(keyName, Buffer.from(prepared.sealedKey, 'base64'));
      });
    });
  }

  protected async openWith(rootKey: Buffer): Promise<OpenSeal> {
    return { rootKey, keyring: await readKeyring(this.physical, rootKey) };
  }

  protected requireOpen(): OpenSeal {
    if (!this.open) throw ServiceError.sealed();
    return this.open;
  }

  /** The open seal with the root key now in force (a seal whose root key a peer can rotate re-reads it). */
  protected inForce(): Promise<OpenSeal> {
    return Promise.resolve(this.requireOpen());
  }

  protected exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

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

/** The seal a configuration names: `shamir`, or an auto-unseal seal around its provider. */
export function createSeal(physical: Physical, build: BuildInfo, wrapper: RootKeyWrapper | undefined, progress?: UnsealShares): Seal {
  return wrapper ? new AutoSeal(physical, build, wrapper) : new ShamirSeal(physical, build, progress);
}

function requireInteger(value: number | undefined, field: string): number {
  if (value === undefined) throw ServiceError.badRequest(`missing required field "${field}"`);
  return value;
}

export function autoConfig(type: string, split: KeySplit, fingerprints: string[] | undefined): AutoSealConfig {
  return {
    type,
    recovery_shares: split.shares,
    recovery_threshold: split.threshold,
    ...(fingerprints && { recovery_pgp_fingerprints: fingerprints }),
  };
}

export function shamirConfig(split: KeySplit, fingerprints: string[] | undefined): ShamirSealConfig {
  return {
    type: 'shamir',
    secret_shares: split.shares,
    secret_threshold: split.threshold,
    ...(fingerprints && { pgp_fingerprints: fingerprints }),
  };
}

export async function readConfig(store: KeyValueStore): Promise<SealConfig | null> {
  const raw = await store.get(SEAL_STORAGE_KEYS.config);
  return raw ? (JSON.parse(raw.toString('utf8')) as SealConfig) : null;
}

/** The stored config when it is a Shamir seal's (a service initialized with another seal has no unseal keys). */
async function readShamirConfig(store: KeyValueStore): Promise<ShamirSealConfig | null> {
  const config = await readConfig(store);
  if (config && config.type !== 'shamir') {
    throw ServiceError.badRequest(`storage was initialized with the ${config.type} seal but the configuration names the shamir seal; to migrate to shamir, mark the ${config.type} seal's stanza disabled = "true"`);
  }
  return config as ShamirSealConfig | null;
}

async function readSealedRootKey(store: KeyValueStore): Promise<Buffer> {
  const sealed = await store.get(SEAL_STORAGE_KEYS.rootKey);
  if (!sealed) throw new Error(`seal storage is incomplete: ${SEAL_STORAGE_KEYS.rootKey} is missing`);
  return sealed;
}

async function writeKeyring(store: KeyValueStore, rootKey: Buffer, keyring: Keyring): Promise<void> {
  await store.put(SEAL_STORAGE_KEYS.keyring, aeadEncrypt(rootKey, keyring.serialize(), SEAL_STORAGE_KEYS.keyring));
}

async function readKeyring(store: KeyValueStore, rootKey: Buffer): Promise<Keyring> {
  const sealed = await store.get(SEAL_STORAGE_KEYS.keyring);
  if (!sealed) throw new Error(`seal storage is incomplete: ${SEAL_STORAGE_KEYS.keyring} is missing`);
  return Keyring.deserialize(aeadDecrypt(rootKey, sealed, SEAL_STORAGE_KEYS.keyring));
}
