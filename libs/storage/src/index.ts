export * from './types';
export * from './keyring';
export { InmemPhysical } from './inmem';
export { PostgresPhysical, type PostgresPhysicalOptions } from './postgres';
export { DATABASE_FILE as EMBEDDED_DATABASE_FILE, EmbeddedPhysical, type EmbeddedPhysicalOptions } from './embedded/embedded';
/** The embedded store of earlier versions (PGlite), loaded only to move its data (`svc operator migrate`). */
export const loadLegacyEmbedded = () => import('./legacy-embedded');
export { createPhysical, type PhysicalPlacement } from './factory';
export { DirectoryLock } from './directory-lock';
export { Barrier, type WriteGuard, type WriteListener } from './barrier';
export { BarrierCipher } from './barrier-cipher';
export { createView } from './view';
export { RecordStore } from './record-store';
export { CachedPhysical } from './cache';
export { InvalidationEpoch } from './invalidation-epoch';
export { frozenJsonDecoder, jsonBytes, readFrozenJson, readJson, readStoredJson, utf8Text, writeJson, type Frozen } from './json-records';
export { storeTables } from './sql/statements';
export { MeteredPhysical } from './metered';
