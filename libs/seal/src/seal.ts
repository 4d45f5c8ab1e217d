import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { ServiceError, UNINITIALIZED_MESSAGE } from '@svc/http';
import { Keyring, type KeyValueStore, type Physical } from '@svc/storage';
import { aeadDecrypt, aeadEncrypt } from './aead';
import { encryptForPgpKey, fingerprint } from './pgp';
import { UNSEAL_KEY_BYTES, combineShares, shareLength, splitKey, validateShareConfig } from './shamir';

/** The only physical entries written outside the barrier: the config in clear, the rest ciphertext. */
export const SEAL_STORAGE_KEYS = {
  config: 'core/seal-config',
  rootKey: 'core/root-key',
  keyring: 'core/keyring',
} as const;

/** Body of `sys/seal-status` (and of `sys/unseal` answers). */
export interface SealStatus {
  type: 'shamir';
  initialized: boolean;
  sealed: boolean;
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
  secret_shares: number;
  secret_threshold: number;
  /** base64 PGP public keys, one per share, in share order. */
  pgp_keys?: string[] | null;
}

export interface InitResult {
  /** Hex of each share, or of each PGP-encrypted share when `pgp_keys` was given. */
  keys: string[];
  keys_base64: string[];
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

interface SealConfig {
  type: 'shamir';
  secret_shares: number;
  secret_threshold: number;
  pgp_fingerprints?: string[];
}

interface UnsealAttempt {
  nonce: string;
  shares: Buffer[];
}

interface OpenSeal {
  rootKey: Buffer;
  keyring: Keyring;
}

const ALREADY_INITIALIZED = 'service is already initialized';

/**
 * The Shamir seal: an unseal key split into shares decrypts the root key, which decrypts the
 * keyring. Key material lives only in this object's memory and only while unsealed; each process
 * unseals on its own, as each Vault node does.
 */
export class ShamirSeal {
  private attempt?: UnsealAttempt;
  private open?: OpenSeal;
  /** Serializes state changes so concurrent unseal calls cannot interleave. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly physical: Physical,
    private readonly build: BuildInfo,
  ) {}

  get keyring(): Keyring | undefined {
    return this.open?.keyring;
  }

  async status(): Promise<SealStatus> {
    const config = await readConfig(this.physical);
    return {
      type: 'shamir',
      initialized: config !== null,
      sealed: this.open === undefined,
      t: config?.secret_threshold ?? 0,
      n: config?.secret_shares ?? 0,
      progress: this.attempt?.shares.length ?? 0,
      nonce: this.attempt?.nonce ?? '',
      version: this.build.version,
      build_date: this.build.buildDate,
      migration: false,
      recovery_seal: false,
      storage_type: this.physical.kind,
    };
  }

  /** Creates the keys and stores them. The seal stays sealed afterwards, as in Vault. */
  async initialize(request: InitRequest): Promise<InitResult> {
    const { secret_shares: shares, secret_threshold: threshold } = request;
    if (await readConfig(this.physical)) throw ServiceError.badRequest(ALREADY_INITIALIZED);
    validateShareConfig(shares, threshold);
    const pgpKeys = request.pgp_keys ?? undefined;
    if (pgpKeys && pgpKeys.length !== shares) {
      throw ServiceError.badRequest(
        `pgp_keys must have one entry per share: got ${pgpKeys.length}, secret_shares is ${shares}`,
      );
    }
    // Reading the fingerprints also validates every key before any secret exists.
    const fingerprints = pgpKeys && (await Promise.all(pgpKeys.map((k, i) => fingerprint(k, `pgp_keys[${i}]`))));
    const config: SealConfig = {
      type: 'shamir',
      secret_shares: shares,
      secret_threshold: threshold,
      ...(fingerprints && { pgp_fingerprints: fingerprints }),
    };

    const unsealKey = randomBytes(UNSEAL_KEY_BYTES);
    const rootKey = randomBytes(32);
    const keyring = Keyring.generate();
    const keyShares = await splitKey(unsealKey, shares, threshold);
    try {
      const handedOut = pgpKeys ? await encryptShares(keyShares, pgpKeys) : keyShares;
      await this.physical.transaction(async (tx) => {
        await tx.lock(SEAL_STORAGE_KEYS.config);
        if (await readConfig(tx)) throw ServiceError.badRequest(ALREADY_INITIALIZED);
        await tx.put(SEAL_STORAGE_KEYS.config, Buffer.from(JSON.stringify(config), 'utf8'));
        await tx.put(SEAL_STORAGE_KEYS.rootKey, aeadEncrypt(unsealKey, rootKey, SEAL_STORAGE_KEYS.rootKey));
        await writeKeyring(tx, rootKey, keyring);
      });
      return {
        keys: handedOut.map((b) => Buffer.from(b).toString('hex')),
        keys_base64: handedOut.map((b) => Buffer.from(b).toString('base64')),
        keyring,
      };
    } finally {
      for (const secret of [unsealKey, rootKey, ...keyShares]) secret.fill(0);
    }
  }

  /**
   * One step of `sys/unseal`. `key` is a share in hex or base64; `reset` discards the shares
   * given so far (the key is then ignored). Wrong shares are detected when the reconstructed
   * key fails to decrypt the root key; progress then starts over.
   */
  submitUnsealKey(key: string | undefined, reset = false): Promise<UnsealResult> {
    return this.exclusive(async () => {
      if (reset) {
        this.clearAttempt();
        return { status: await this.status() };
      }
      const config = await readConfig(this.physical);
      if (!config) throw ServiceError.badRequest(UNINITIALIZED_MESSAGE);
      if (this.open) return this.result();
      if (!key) throw ServiceError.badRequest('key is required unless reset is true');

      const share = parseShare(key, shareLength(config.secret_shares));
      const attempt = (this.attempt ??= { nonce: randomUUID(), shares: [] });
      if (attempt.shares.some((given) => timingSafeEqual(given, share))) {
        share.fill(0);
        throw ServiceError.badRequest('this key share was already submitted in the current unseal attempt');
      }
      attempt.shares.push(share);
      if (attempt.shares.length < config.secret_threshold) return this.result();

      const unsealKey = await combineShares(attempt.shares).catch(() => undefined);
      this.clearAttempt();
      try {
        this.open = await this.unlock(unsealKey);
      } finally {
        unsealKey?.fill(0);
      }
      return this.result();
    });
  }

  /** Drops all key material held in memory, and any unseal progress. */
  seal(): Promise<void> {
    return this.exclusive(async () => {
      this.open?.rootKey.fill(0);
      this.open = undefined;
      this.clearAttempt();
    });
  }

  /** Stores a changed keyring (after `sys/rotate`) under the root key and makes it current. */
  persistKeyring(keyring: Keyring): Promise<void> {
    return this.exclusive(async () => {
      const open = this.requireOpen();
      await writeKeyring(this.physical, open.rootKey, keyring);
      open.keyring = keyring;
    });
  }

  /** Re-reads the stored keyring, for a process whose peer rotated it. */
  reloadKeyring(): Promise<Keyring> {
    return this.exclusive(async () => {
      const open = this.requireOpen();
      open.keyring = await readKeyring(this.physical, open.rootKey);
      return open.keyring;
    });
  }

  private async unlock(unsealKey: Buffer | undefined): Promise<OpenSeal> {
    const sealedRootKey = await this.physical.get(SEAL_STORAGE_KEYS.rootKey);
    if (!sealedRootKey) throw new Error(`seal storage is incomplete: ${SEAL_STORAGE_KEYS.rootKey} is missing`);
    let rootKey: Buffer;
    try {
      if (!unsealKey) throw new Error('shares could not be combined');
      rootKey = aeadDecrypt(unsealKey, sealedRootKey, SEAL_STORAGE_KEYS.rootKey);
    } catch {
      throw ServiceError.badRequest(
        'unseal failed: the submitted key shares do not form this service\'s unseal key; progress has been reset',
      );
    }
    return { rootKey, keyring: await readKeyring(this.physical, rootKey) };
  }

  private requireOpen(): OpenSeal {
    if (!this.open) throw ServiceError.sealed();
    return this.open;
  }

  private async result(): Promise<UnsealResult> {
    return { status: await this.status(), ...(this.open && { keyring: this.open.keyring }) };
  }

  private clearAttempt(): void {
    this.attempt?.shares.forEach((share) => share.fill(0));
    this.attempt = undefined;
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

async function readConfig(store: KeyValueStore): Promise<SealConfig | null> {
  const raw = await store.get(SEAL_STORAGE_KEYS.config);
  return raw ? (JSON.parse(raw.toString('utf8')) as SealConfig) : null;
}

async function writeKeyring(store: KeyValueStore, rootKey: Buffer, keyring: Keyring): Promise<void> {
  await store.put(SEAL_STORAGE_KEYS.keyring, aeadEncrypt(rootKey, keyring.serialize(), SEAL_STORAGE_KEYS.keyring));
}

async function readKeyring(store: KeyValueStore, rootKey: Buffer): Promise<Keyring> {
  const sealed = await store.get(SEAL_STORAGE_KEYS.keyring);
  if (!sealed) throw new Error(`seal storage is incomplete: ${SEAL_STORAGE_KEYS.keyring} is missing`);
  return Keyring.deserialize(aeadDecrypt(rootKey, sealed, SEAL_STORAGE_KEYS.keyring));
}

/** Vault encrypts the share's hex text, so `base64 -d | gpg -d` prints what the user types into unseal. */
function encryptShares(shares: Buffer[], pgpKeys: string[]): Promise<Uint8Array[]> {
  return Promise.all(
    shares.map((share, i) => encryptForPgpKey(pgpKeys[i], Buffer.from(share.toString('hex'), 'utf8'), `pgp_keys[${i}]`)),
  );
}

/** Vault accepts a share as hex or base64 (hex tried first). */
function parseShare(text: string, expectedBytes: number): Buffer {
  const trimmed = text.trim();
  let bytes: Buffer;
  if (/^(?:[0-9a-fA-F]{2})+$/.test(trimmed)) bytes = Buffer.from(trimmed, 'hex');
  else if (/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) && trimmed.length % 4 === 0) bytes = Buffer.from(trimmed, 'base64');
  else throw ServiceError.badRequest('key must be a hex or base64 string');
  if (bytes.length !== expectedBytes) {
    throw ServiceError.badRequest(`key must decode to ${expectedBytes} bytes, got ${bytes.length}`);
  }
  return bytes;
}
