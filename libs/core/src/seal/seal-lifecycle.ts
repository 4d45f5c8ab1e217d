import type { Logger } from 'pino';
import { BusUnavailableError } from '@svc/bus';
import type { ServerConfig } from '@svc/config';
import {
  AwsKmsKeyWrapper,
  KeyringDistributor,
  KeyringReceiver,
  MIGRATE_REQUIRED,
  MIGRATE_UNEXPECTED,
  Pkcs11KeyWrapper,
  SealUnavailableError,
  TransitKeyWrapper,
  createConfiguredSeal,
  encryptRootToken,
  type InitRequest as SealInitRequest,
  type RootKeyWrapper,
  type Seal,
  type UnsealShares,
} from '@svc/seal';
import { type Barrier, type Keyring, type Physical } from '@svc/storage';
import { BUILD_DATE, describeRequestError, ServiceError, VERSION } from '@svc/api-contract';
import { KEYRING_CHANGED, PEER_UNSEALED, SEAL_GENERATION_KEY, STORAGE_RESTORED, generationOf } from '../cluster/coherence-keys';
import { Listeners } from '../events';

/** How long a service whose seal provider could not be reached waits before asking again. */
const AUTO_UNSEAL_RETRY_MS = 2_000;
/** How many times a sealed replica asks its peers for the keyring when following an unseal. */
const PEER_UNSEAL_ATTEMPTS = 3;
/** How many times a replica asks its peers for a rotated keyring before it gives up until the next change. */
const ROTATED_KEYRING_ATTEMPTS = 20;

export type CoreState = 'uninitialized' | 'sealed' | 'unsealed';

/** The body of `sys/init`: unseal shares (Shamir) or recovery shares (auto-unseal), and the root token. */
export interface InitAnswer {
  keys: string[];
  keys_base64: string[];
  recovery_keys?: string[];
  recovery_keys_base64?: string[];
  root_token: string;
}

/** sys/init's body: the seal's settings and how the root token is handed out. */
export interface InitRequest extends SealInitRequest {
  root_token_pgp_key?: string;
  /** Dev mode only: the root token's value (`-dev-root-token-id`). */
  rootTokenId?: string;
}

/** The auto-unseal provider a `seal` stanza names; none for the Shamir seal. */
function sealProvider(seal: ServerConfig['seal'], logger: Logger): RootKeyWrapper | undefined {
  switch (seal.type) {
    case 'shamir':
      return undefined;
    case 'pkcs11':
      return new Pkcs11KeyWrapper(seal);
    case 'awskms':
      return new AwsKmsKeyWrapper(seal);
    case 'transit':
      return new TransitKeyWrapper(seal, (err) => logger.warn({ err: err.message }, 'transit seal token renewal failed; retrying'));
  }
}

/** The seal the configuration names (and the one it migrates from), over `physical`. */
export function configuredSeal(config: ServerConfig, physical: Physical, logger: Logger, unsealShares?: UnsealShares): Seal {
  const { seal, disabledSeal } = config;
  return createConfiguredSeal(physical, { version: VERSION, buildDate: BUILD_DATE }, sealProvider(seal, logger), disabledSeal && sealProvider(disabledSeal, logger), unsealShares);
}

export interface SealLifecycleDeps {
  seal: Seal;
  barrier: Barrier;
  /** The store below the barrier: the seal generation lives there, readable while sealed. */
  physical: Physical;
  bus: ConstructorParameters<typeof KeyringDistributor>[0];
  subjectPrefix?: string;
  /** Tells the other replicas of a change they must follow before the call that made it returns. */
  announce(key: string): void;
  createRootToken(id?: string): Promise<string>;
  logger: Logger;
  /** The seal type the configuration names, for the log of a seal migration. */
  sealType: string;
}

/**
 * The seal's life in this process and beside its peers: initialization, unseal (with shares, by
 * the provider, or following a peer), seal, keyring rotation and the root key's hand-off between
 * replicas. What the other parts do when the barrier opens or closes, they do as listeners of the
 * events here: this part calls none of them.
 */
export class SealLifecycle {
  readonly seal: Seal;
  /** The barrier is open and the listeners of `opening` loaded their state: load it. */
  readonly opening = new Listeners();
  /** A client unsealed this replica, or it followed a peer that did: background work may start. */
  readonly unsealed = new Listeners();
  /** The barrier is about to close: drop what was read through it. */
  readonly sealed = new Listeners();
  /** Another process replaced the storage and this one reopened it: read everything again. */
  readonly storageReplaced = new Listeners();
  /** When this replica last unsealed. */
  activeSince?: Date;
  private readonly barrier: Barrier;
  private readonly distributor: KeyringDistributor;
  /** Replicas share storage and one keyring: a peer's unseal (or seal) reaches this one too. */
  private readonly peers: KeyringReceiver;
  private initialized = false;
  /** Set once an unseal has loaded the cached state: the barrier opens first, so it can be read. */
  private opened = false;
  /** The seal generation when this replica unsealed. */
  private unsealedInGeneration = 0;
  /** A sealed replica's check, on a request, that no peer has unsealed meanwhile. */
  private catchingUp?: Promise<void>;
  private peerTransitions: Promise<void> = Promise.resolve();
  /** Set while an auto-unseal seal's provider could not be reached at start and another try is due. */
  private autoUnsealRetry?: NodeJS.Timeout;
  private stopping = false;

  constructor(private readonly deps: SealLifecycleDeps) {
    this.seal = deps.seal;
    this.barrier = deps.barrier;
    this.distributor = new KeyringDistributor(deps.bus, {
      subjectPrefix: deps.subjectPrefix,
      rootKey: () => (this.seal.rootKeyFromPeers ? this.seal.rootKeyCopy() : undefined),
      sealGeneration: () => this.unsealedInGeneration,
    });
    this.peers = new KeyringReceiver(deps.bus, {
      subjectPrefix: deps.subjectPrefix,
      onError: (err) => deps.logger.warn({ err: describeRequestError(err) }, 'keyring request from peer failed'),
    });
  }

  get state(): CoreState {
    if (!this.initialized) return 'uninitialized';
    // A replica following a peer's unseal answers as sealed until its mount tables are loaded.
    return this.barrier.sealed || !this.opened ? 'sealed' : 'unsealed';
  }

  /** Listens to the peers; a peer already unsealed is followed before this returns, so no client meets this replica still sealed. */
  async joinPeers(): Promise<void> {
    this.initialized = (await this.seal.status()).initialized;
    this.peers.onChange((keyring, sealGeneration) => {
      // Applied in order, one at a time; a failure is logged, the next announcement retries.
      this.peerTransitions = this.peerTransitions
        .then(() => this.followPeers(keyring, sealGeneration))
        .catch((err: unknown) => this.deps.logger.warn({ err: describeRequestError(err) }, 'following a peer seal change failed'));
    });
    await this.peers.start();
    await this.peerTransitions;
  }

  /** Starts the seal; an auto-unseal seal unseals, unless a seal migration waits for the old seal's keys. */
  async start(): Promise<void> {
    this.seal.start();
    if (!this.initialized) return;
    const status = await this.seal.status();
    if (status.migration) {
      this.deps.logger.warn({ from: status.type, to: this.deps.sealType }, "entering seal migration mode: the service stays sealed until sys/unseal is given the old seal's keys with migrate=true");
    } else if (this.seal.recoverySeal) {
      await this.unsealAutomatically();
    }
  }

  stop(): void {
    this.stopping = true;
    clearTimeout(this.autoUnsealRetry);
    this.seal.close();
    this.peers.close();
    this.distributor.close();
  }

  /**
   * Opens an auto-unseal seal through its provider. While the provider cannot be reached the
   * service stays sealed (503) and tries again, so it recovers on its own when the provider returns.
   */
  private async unsealAutomatically(): Promise<void> {
    this.autoUnsealRetry = undefined;
    if (this.stopping || !this.barrier.sealed) return;
    try {
      await this.unsealWith(await this.seal.unsealAutomatically());
    } catch (err) {
      if (!(err instanceof SealUnavailableError)) throw err;
      this.deps.logger.error({ err: err.message, retryInMs: AUTO_UNSEAL_RETRY_MS }, 'the seal could not unseal the service; it stays sealed and tries again');
      this.autoUnsealRetry = setTimeout(() => {
        this.unsealAutomatically().catch((failure: unknown) => this.deps.logger.error({ err: describeRequestError(failure) }, 'automatic unseal failed'));
      }, AUTO_UNSEAL_RETRY_MS);
    }
  }

  /** sys/init: creates the seal, the keyring and the root token; an auto-unseal seal then unseals. */
  async initialize(req: InitRequest): Promise<InitAnswer> {
    if (this.initialized) throw ServiceError.badRequest('Service is already initialized');
    const result = await this.seal.initialize(req).catch((err: unknown) => {
      // The provider's message names what failed (a missing HSM key, say), never key material.
      throw err instanceof SealUnavailableError ? ServiceError.unavailable(err.message) : err;
    });
    this.initialized = true;
    // Unsealed only long enough to write the root token and default mounts; peers are not told.
    await this.unsealWith(result.keyring, false);
    const root = await this.deps.createRootToken(req.rootTokenId);
    await this.sealLocally();
    const rootToken = req.root_token_pgp_key ? await encryptRootToken(req.root_token_pgp_key, root) : root;
    if (this.seal.recoverySeal) await this.unsealAutomatically();
    const { keyring: _keyring, ...keys } = result;
    return { ...keys, root_token: rootToken };
  }

  /**
   * sys/unseal: one share at a time; the last one unseals. In seal migration mode the shares are
   * the old seal's and `migrate` must be set (and only then), as Vault requires.
   */
  async submitUnsealKey(key: string | undefined, reset: boolean, migrate = false): Promise<void> {
    if (!this.initialized) throw ServiceError.uninitialized();
    const from = await this.seal.status();
    if (!reset && migrate !== from.migration) throw ServiceError.badRequest(migrate ? MIGRATE_UNEXPECTED : MIGRATE_REQUIRED);
    if (from.migration) {
      const outcome = await this.seal.submitUnsealKey(key ?? '', reset);
      if (!outcome.keyring) return;
      this.deps.logger.warn({ from: from.type, to: this.deps.sealType }, 'seal migration complete: the root key is now protected by the new seal');
      await this.unsealEverywhere(outcome.keyring);
      return;
    }
    // An auto-unseal seal refuses every key, sealed or not: recovery keys must never look like unseal keys.
    if (!this.barrier.sealed && !this.seal.recoverySeal) return;
    const outcome = await this.seal.submitUnsealKey(key ?? '', reset);
    if (outcome.keyring) await this.unsealEverywhere(outcome.keyring);
  }

  /**
   * A client's unseal: the announcement alone lets the sealed replicas follow at their own pace,
   * so a client's next call could meet one still sealed; noting PEER_UNSEALED makes each of them
   * follow before the call returns, as a seal does.
   */
  private async unsealEverywhere(keyring: Keyring): Promise<void> {
    await this.unsealWith(keyring);
    this.deps.announce(PEER_UNSEALED);
  }

  /** Opens the barrier and has the state loaded; `announce` hands the keyring to services and peers. */
  private async unsealWith(keyring: Keyring, announce = true): Promise<void> {
    this.unsealedInGeneration = await this.sealGeneration();
    this.barrier.unseal(keyring);
    await this.opening.emit();
    this.opened = true;
    this.activeSince = new Date();
    if (!announce) return;
    await this.unsealed.emit();
    await this.distributor.publish(keyring);
    this.deps.logger.info({ term: keyring.activeTerm }, 'unsealed');
  }

  /** Seals this process and every process holding the keyring. */
  async sealNow(): Promise<void> {
    await this.deps.physical.transaction(async (tx) => {
      const next = generationOf(await tx.get(SEAL_GENERATION_KEY)) + 1;
      await tx.put(SEAL_GENERATION_KEY, Buffer.from(String(next)));
    });
    await this.sealLocally();
    await this.distributor.seal();
    // The broadcast is not acknowledged; every replica acknowledges this key before the call returns.
    this.deps.announce(SEAL_GENERATION_KEY);
  }

  private async sealLocally(): Promise<void> {
    this.opened = false;
    this.distributor.close(); // a sealed replica must not hand out its old keyring
    await this.sealed.emit();
    await this.seal.seal();
    this.barrier.seal();
    this.deps.logger.info('sealed');
  }

  /** sys/rotate: a new keyring term for new writes; old terms stay for reading. */
  async rotateKeyring(): Promise<Keyring> {
    await this.holdRootKey();
    const next = this.barrier.keyring.rotate();
    await this.installKeyring(next);
    return next;
  }

  /** Makes `keyring` this cluster's: stored under the root key, used here, fetched by the replicas. */
  async installKeyring(keyring: Keyring): Promise<void> {
    await this.storeKeyring(keyring);
    await this.distributor.publish(keyring);
    // Replicas fetch the new term before a request that made it returns (the pipeline flushes).
    this.deps.announce(KEYRING_CHANGED);
  }

  /** Stores `keyring` under the root key and uses it here; `publishKeyring` then hands it out. */
  async storeKeyring(keyring: Keyring): Promise<void> {
    await this.seal.persistKeyring(keyring);
    this.barrier.unseal(keyring);
  }

  /** Hands this process's keyring to the engine services and peers that ask for it. */
  publishKeyring(keyring: Keyring): Promise<void> {
    return this.distributor.publish(keyring);
  }

  /**
   * Another gateway replica may have initialized the shared storage, or unsealed, since we last
   * looked: an unseal whose announcement this replica has not followed yet (it may have started
   * too late for the unsealing one to wait for it) is followed now, one fetch for all callers.
   */
  async refreshSealState(): Promise<CoreState> {
    if (!this.initialized) this.initialized = (await this.seal.status()).initialized;
    if (this.initialized && this.state === 'sealed' && !this.stopping) {
      this.catchingUp ??= this.followPeerUnseal().finally(() => (this.catchingUp = undefined));
      await this.catchingUp;
    }
    return this.state;
  }

  assertUnsealed(): void {
    if (!this.initialized) throw ServiceError.uninitialized();
    // A replica following a peer's unseal has an open barrier before its tables are loaded.
    if (this.state !== 'unsealed') throw ServiceError.sealed();
  }

  /**
   * Another replica changed `keys`: follows its unseal, seal, restore or keyring rotation. Whether
   * the other caches should now be reloaded for the keys (not when this replica is or became
   * sealed, nor after a restore, which reloaded everything).
   */
  async followChanges(keys: readonly string[]): Promise<boolean> {
    if (keys.includes(PEER_UNSEALED)) await this.followPeerUnseal();
    if (this.barrier.sealed) return false;
    if (keys.includes(SEAL_GENERATION_KEY) && (await this.sealGeneration()) !== this.unsealedInGeneration) {
      await this.followPeerSeal();
      return false;
    }
    if (keys.includes(STORAGE_RESTORED)) {
      await this.followStorageReplaced();
      return false;
    }
    if (keys.includes(KEYRING_CHANGED)) await this.fetchRotatedKeyring();
    return true;
  }

  /**
   * Contact with the cluster came back after a gap: a seal made meanwhile seals this replica too,
   * a keyring rotated meanwhile is fetched from the peers. Whether the caches should be reloaded.
   */
  async followResync(): Promise<boolean> {
    if (this.barrier.sealed) return false;
    if ((await this.sealGeneration()) !== this.unsealedInGeneration) {
      this.deps.logger.warn('the cluster was sealed while this replica was out of contact; sealing');
      await this.sealLocally();
      await this.peers.refresh();
      return false;
    }
    await this.fetchRotatedKeyring();
    return true;
  }

  /**
   * A peer rotated the keyring. This replica stops serving its now stale keyring, then asks the
   * others until one with the new term answers (stale peers may still answer for a moment).
   */
  private async fetchRotatedKeyring(): Promise<void> {
    const term = this.barrier.keyring.activeTerm;
    this.distributor.close();
    for (let attempt = 0; attempt < ROTATED_KEYRING_ATTEMPTS && !this.barrier.sealed && this.barrier.keyring.activeTerm <= term; attempt++) {
      await this.peers.refresh();
      await this.peerTransitions;
    }
    if (!this.barrier.sealed) await this.distributor.publish(this.barrier.keyring);
  }

  /**
   * Another process replaced the storage (a restore, or a secondary's activation, which brings the
   * primary's keyring, whose term need not be higher than the one here): the keyring is read
   * again with the root key (taken from a peer if this replica followed an unseal), announced so
   * the engine services ask again, and the listeners reload what they cached. A replica that
   * cannot read it seals rather than serve with the old one; its next request follows its peers'
   * unseal again.
   */
  private async followStorageReplaced(): Promise<void> {
    let keyring: Keyring;
    try {
      await this.holdRootKey();
      keyring = await this.seal.reloadKeyring();
    } catch (err) {
      this.deps.logger.warn({ err: describeRequestError(err) }, 'the storage was replaced and its keyring could not be read here; sealing until the next request follows the peers');
      await this.sealLocally();
      return;
    }
    this.barrier.unseal(keyring);
    await this.distributor.publish(keyring);
    await this.storageReplaced.emit();
  }

  /** A peer sealed the cluster: seal here, in turn with the seal broadcast, which may come first. */
  private followPeerSeal(): Promise<void> {
    const sealed = this.peerTransitions.then(() => this.followPeers(undefined));
    this.peerTransitions = sealed.catch((err: unknown) => this.deps.logger.warn({ err: describeRequestError(err) }, 'following a peer seal change failed'));
    return sealed;
  }

  /** A peer unsealed: fetch its keyring (unless already open) and finish following it. */
  private async followPeerUnseal(): Promise<void> {
    // A busy peer may answer late: asked again a few times (one with no peer unsealed is told so at once).
    for (let attempt = 0; attempt < PEER_UNSEAL_ATTEMPTS && this.state !== 'unsealed'; attempt++) {
      await this.peers.refresh();
      await this.peerTransitions;
    }
  }

  private async followPeers(keyring: Keyring | undefined, sealGeneration?: number): Promise<void> {
    if (keyring && this.barrier.sealed) {
      // A peer that unsealed before the cluster's last seal, and has yet to follow it, is not followed.
      if (sealGeneration !== undefined && sealGeneration < (await this.sealGeneration())) return;
      this.initialized = true;
      await this.unsealWith(keyring);
      // Every unsealed gateway holds the root key, as one unsealed with shares does: a sys/rotate
      // then works on any of them, whichever peers have gone since.
      await this.holdRootKey().catch((err: unknown) => this.deps.logger.warn({ err: describeRequestError(err) }, 'taking the root key from a peer failed; sys/rotate will ask again'));
    } else if (keyring && keyring.activeTerm > this.barrier.keyring.activeTerm) {
      this.barrier.unseal(keyring); // a peer rotated: new writes use the new term here too
      await this.distributor.publish(keyring);
    } else if (!keyring && !this.barrier.sealed) {
      await this.sealLocally();
    }
  }

  /**
   * A gateway (or worker) that followed a peer's unseal holds the keyring but not the root key the
   * keyring is stored under: with a Shamir seal it takes it from a peer that holds it, sealed to
   * this process over the authenticated bus.
   */
  private async holdRootKey(): Promise<void> {
    if (!this.seal.rootKeyFromPeers || this.seal.keyring) return;
    const rootKey = await this.peers.fetchRootKey().catch((err: unknown) => {
      if (err instanceof BusUnavailableError) throw ServiceError.unavailable('no unsealed gateway holding the root key answered; retry, or seal and unseal with the unseal keys');
      throw err;
    });
    try {
      await this.seal.adoptRootKey(rootKey);
    } finally {
      rootKey.fill(0);
    }
    this.distributor.serveRootKey();
  }

  private async sealGeneration(): Promise<number> {
    return generationOf(await this.deps.physical.get(SEAL_GENERATION_KEY));
  }
}
