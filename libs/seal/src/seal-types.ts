import type { SealStatus as WireSealStatus } from '@svc/sdk';
import type { Keyring } from '@svc/storage';
import type { RekeyTarget } from './rekey';
import type { ShareVerifier } from './share-verifier';

/**
 * Body of `sys/seal-status` (and of `sys/unseal` answers): the SDK's wire type, with the fields a
 * seal always answers. `type` is `shamir` or the auto-unseal seal's type; `t` and `n` the threshold
 * and number of the unseal shares, or of the recovery shares with an auto-unseal seal.
 */
export type SealStatus = Required<
  Pick<WireSealStatus, 'type' | 'initialized' | 'sealed' | 't' | 'n' | 'progress' | 'nonce' | 'version' | 'build_date' | 'migration' | 'recovery_seal' | 'storage_type'>
>;

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
