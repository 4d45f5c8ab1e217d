import { randomBytes } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import { Keyring, type Physical } from '@svc/storage';
import type { KeySplit } from './key-split';
import { UNSEAL_KEY_BYTES, splitKey } from './shamir';
import { handOutShares, type HandedOutShares } from './shares';
import type { BuildInfo, SealStatus } from './seal-types';
import { readConfig, readKeyring, writeKeyring, type SealConfig } from './seal-storage';
import { SEAL_STORAGE_KEYS } from './storage-keys';

/** A rekey waiting for verification: what `install` will store. */
export interface PreparedRekey<Config> {
  config: Config;
  /** The new key's protected form (base64): the root key under the unseal key, or the recovery key under the root key. */
  sealedKey: string;
}

export interface OpenSeal {
  rootKey: Buffer;
  keyring: Keyring;
}

const ALREADY_INITIALIZED = 'service is already initialized';

/** What every seal does the same way once it holds the root key: the keyring and its storage. */
export abstract class KeyringSeal {
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

/** A field an init request must give; a 400 when missing. */
export function requireInteger(value: number | undefined, field: string): number {
  if (value === undefined) throw ServiceError.badRequest(`missing required field "${field}"`);
  return value;
}
