import { ServiceError } from '@svc/api-contract';
import { Keyring, type KeyValueStore } from '@svc/storage';
import { aeadDecrypt, aeadEncrypt } from './aead';
import type { KeySplit } from './key-split';
import { SEAL_STORAGE_KEYS } from './storage-keys';

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
export async function readShamirConfig(store: KeyValueStore): Promise<ShamirSealConfig | null> {
  const config = await readConfig(store);
  if (config && config.type !== 'shamir') {
    throw ServiceError.badRequest(`storage was initialized with the ${config.type} seal but the configuration names the shamir seal; to migrate to shamir, mark the ${config.type} seal's stanza disabled = "true"`);
  }
  return config as ShamirSealConfig | null;
}

export async function readSealedRootKey(store: KeyValueStore): Promise<Buffer> {
  const sealed = await store.get(SEAL_STORAGE_KEYS.rootKey);
  if (!sealed) throw new Error(`seal storage is incomplete: ${SEAL_STORAGE_KEYS.rootKey} is missing`);
  return sealed;
}

export async function writeKeyring(store: KeyValueStore, rootKey: Buffer, keyring: Keyring): Promise<void> {
  await store.put(SEAL_STORAGE_KEYS.keyring, aeadEncrypt(rootKey, keyring.serialize(), SEAL_STORAGE_KEYS.keyring));
}

export async function readKeyring(store: KeyValueStore, rootKey: Buffer): Promise<Keyring> {
  const sealed = await store.get(SEAL_STORAGE_KEYS.keyring);
  if (!sealed) throw new Error(`seal storage is incomplete: ${SEAL_STORAGE_KEYS.keyring} is missing`);
  return Keyring.deserialize(aeadDecrypt(rootKey, sealed, SEAL_STORAGE_KEYS.keyring));
}
