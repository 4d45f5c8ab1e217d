import type { CertifiedKey } from './pki';

export const REPLICATION_MODES = ['performance', 'dr'] as const;
export type ReplicationMode = (typeof REPLICATION_MODES)[number];

/**
 * What the write-ahead log and Merkle index report for the status endpoints. The composition
 * supplies the implementation; without one, those status fields are left out.
 */
export interface ReplicationLogStatus {
  /** Index of the last WAL entry written here (primary). */
  lastWal(): Promise<number>;
  /** Index of the last WAL entry applied from the primary (secondary). */
  lastRemoteWal(): Promise<number>;
  /** Hex root hash of the replicated Merkle tree. */
  merkleRoot(): Promise<string>;
  corruptedMerkleTree(): Promise<boolean>;
  /** RFC 3339 time of the last corruption check, '' if none ran. */
  lastCorruptionCheckEpoch(): Promise<string>;
}

/** A secondary the primary issued an activation token for. */
export interface KnownSecondary {
  id: string;
  /** Serial (hex) of the client certificate the secondary holds; only it is accepted for this id. */
  serial: string;
  /** Set once the secondary has used its token (activation over the cluster link). */
  activated: boolean;
}

export interface PrimaryState {
  mode: 'primary';
  clusterId: string;
  /** The cluster CA of this primary (key included): issues listener and client certificates. */
  ca: CertifiedKey;
  /** `primary_cluster_addr`: the address given to secondaries instead of this node's own. */
  primaryClusterAddr: string;
  secondaries: KnownSecondary[];
}

/** What a secondary needs to reach its primary: from the activation bundle. */
export interface PrimaryLink {
  apiAddr: string;
  clusterAddrs: string[];
  /** The address heartbeats go to (the first that answered). */
  clusterAddr: string;
  caCert: string;
  clientCert: CertifiedKey;
}

export interface SecondaryState {
  mode: 'secondary';
  clusterId: string;
  /** '' after a demotion until update-primary gives one. */
  secondaryId: string;
  /** None after a demotion, or after update-primary with a blank token. */
  primary?: PrimaryLink;
}

export interface DisabledState {
  mode: 'disabled';
}

export type ReplicationState = PrimaryState | SecondaryState | DisabledState;

/** What `secondary-token` hands a secondary (wrapped, or encrypted to its public key). */
export interface ActivationBundle {
  mode: ReplicationMode;
  cluster_id: string;
  secondary_id: string;
  primary_api_addr: string;
  primary_cluster_addrs: string[];
  ca_cert: string;
  client_cert: string;
  client_key: string;
}

export type FilterMode = 'allow' | 'deny';

export interface PathsFilter {
  mode: FilterMode;
  paths: string[];
}

/** A mount as the dynamic filters see it: its namespace path ('' or 'a/b/') and its path ('secret/'). */
export interface MountRef {
  namespace: string;
  path: string;
}
