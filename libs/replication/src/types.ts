import type { CertifiedKey } from './pki';

export const REPLICATION_MODES = ['performance', 'dr'] as const;
export type ReplicationMode = (typeof REPLICATION_MODES)[number];

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
  /** Where its data is stored (`logical/<uuid>/`): what a paths filter keeps from a secondary. */
  storagePrefix: string;
}

/** A namespace as the paths filters see it: its path ('a/') and the storage prefix of its mount tables and policies. */
export interface NamespaceRef {
  path: string;
  storagePrefix: string;
}
