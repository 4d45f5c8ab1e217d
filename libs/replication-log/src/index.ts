/**
 * Replication storage: the write-ahead log's consumers (shipper buffer, retention), the key
 * classes, the Merkle index and the secondary's apply and Merkle diff/sync. Transport-agnostic:
 * the cluster link carries the plain requests and answers defined here. The log itself is written
 * by `@svc/storage` in the same transaction as the data (`Physical.log`).
 */
export { type KeyClass, KeyClassifier, LOCAL_MOUNT_TABLES, LOCAL_PREFIXES, OWN_PREFIXES } from './classify';
export { type KeyHash, type KeyPosition, MerkleTree, PAGES, positionOf, SUBPAGES } from './merkle-tree';
export { type LastCheck, type MerkleCorruptionReport, MerkleIndex, type ReindexOptions, TREE_TYPES, type TreeType } from './merkle-index';
export { ShipperBuffer, type ShipperBufferLimits, type ShipperRead } from './shipper-buffer';
export { type ClassifiedEntry, DEFAULT_SHIPPER_LIMITS, ReplicationLog } from './replication-log';
export {
  answerBucketHashes,
  answerBucketKeys,
  answerEntries,
  answerPageHashes,
  applyBatch,
  applySync,
  type BatchRange,
  diffAndSync,
  differingBuckets,
  differingPages,
  keysToSync,
  forgetRemoteWal,
  lastRemoteWal,
  type MerkleRemote,
  type MerkleSource,
  type PageHashesAnswer,
  ResyncRequiredError,
  type SyncOptions,
  type SyncResult,
} from './sync';
