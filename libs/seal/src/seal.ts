import type { Physical } from '@svc/storage';
import { AutoSeal } from './auto-seal';
import type { RootKeyWrapper } from './key-wrapper';
import { ShamirSeal } from './shamir-seal';
import type { BuildInfo, Seal } from './seal-types';
import type { UnsealShares } from './shares';

// The seal's public surface, gathered here so index.ts and importers of './seal' see one module;
// named, so that the storage helpers the seals share stay internal.
export { AutoSeal, ShamirSeal };
export { autoConfig, readConfig, shamirConfig, type AutoSealConfig, type SealConfig, type ShamirSealConfig } from './seal-storage';
export type { BuildInfo, InitRequest, InitResult, Seal, SealStatus, UnsealResult } from './seal-types';
export { SEAL_STORAGE_KEYS } from './storage-keys';

/** The seal a configuration names: `shamir`, or an auto-unseal seal around its provider. */
export function createSeal(physical: Physical, build: BuildInfo, wrapper: RootKeyWrapper | undefined, progress?: UnsealShares): Seal {
  return wrapper ? new AutoSeal(physical, build, wrapper) : new ShamirSeal(physical, build, progress);
}
