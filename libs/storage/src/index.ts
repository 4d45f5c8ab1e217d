export * from './types';
export * from './keyring';
export { InmemPhysical } from './inmem';
export { PostgresPhysical, type PostgresPhysicalOptions } from './postgres';
export { EmbeddedPhysical, type EmbeddedPhysicalOptions } from './embedded';
export { createPhysical } from './factory';
export { Barrier, type WriteListener } from './barrier';
export { createView } from './view';
export { CachedPhysical } from './cache';
