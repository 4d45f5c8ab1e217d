import type { WrapInfo } from '@svc/api-contract';
import type { ShareVerifier } from '@svc/seal';
import type { ShipperBufferLimits } from '@svc/replication-log';
import type { Keyring, Physical, StorageView } from '@svc/storage';
import type { MountRef, NamespaceRef } from './types';

interface Logger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** What the replication manager needs from the core that composes it. */
export interface ReplicationHost {
  /** The barrier under `core/replication/`: state of both modes (local, never replicated). */
  store: StorageView;
  logger: Logger;
  /** This node's API address (api_addr, else its first listener). */
  apiAddr(): string;
  /** host:port the cluster listener binds, when this node has one. */
  clusterListenAddress(): string | undefined;
  /** This node's cluster address as secondaries dial it (cluster_addr, else the bound listener). */
  clusterAddr(bound: string): string;
  /** Wraps `data` in a response-wrapping token (the core's wrapping) of the root namespace. */
  wrap(data: Record<string, unknown>, ttlSeconds: number, creationPath: string): Promise<WrapInfo>;
  keyring(): Keyring;
  /** What checks this cluster's unseal (or recovery) shares, handed to its DR secondaries. */
  shareVerifier(): Promise<ShareVerifier>;
  /**
   * Replaces the whole storage with `entries` (keys under `store`, plaintext) encrypted under
   * `keyring`, which becomes this cluster's; the seal's own entries stay. Cached state is reloaded.
   */
  replaceStorage(keyring: Keyring, entries: [string, Buffer][]): Promise<void>;
  mounts(): MountRef[];
  namespaces(): NamespaceRef[];
  /**
   * The store below the barrier (values as stored), which replication copies: its log while this
   * cluster is a primary or a secondary, its Merkle index.
   */
  physical: Physical;
  /** The log shipper's limits (the `replication` stanza); defaults when absent. */
  shipperLimits?: ShipperBufferLimits;
  /** The uuids of the mounts whose storage is local (`local: true`, and cubbyholes). */
  localMountUuids(): string[];
  /** Makes `keyring` (the primary's, with a term this cluster lacks) this cluster's. */
  adoptKeyring(keyring: Keyring): Promise<void>;
  /** Replicated writes were applied to storage: these keys, or (after a resync) any. Cached state is reloaded. */
  storageChanged(keys: string[] | undefined): Promise<void>;
  /**
   * On a performance primary: runs a write a secondary forwarded (see `forwardToPrimary`) and
   * answers it; failures of the write itself are in the answer, not thrown.
   */
  serveForwarded(call: ForwardCall, body: Record<string, unknown>): Promise<Record<string, unknown>>;
  /**
   * Set in a process that does not own its cluster's replication (a gateway beside the replication
   * service, a gateway worker other than the first, a replication service without the lease): the
   * calls of OWNER_CALLS go to the owner, and this process keeps only the state (what it may write,
   * the modes), read from storage.
   */
  sendToOwner?: SendToOwner;
}

/**
 * The calls that need what only the owner of a cluster's replication holds (the cluster listener,
 * the log and Merkle index, the link to the primary and its heartbeats), so other processes of the
 * cluster send them to it. The rest reads and writes the replication state in storage.
 */
export const OWNER_CALLS = [
  'status',
  'forwardToPrimary',
  'merkleCheck',
  'reindex',
  'enablePrimary',
  'demotePrimary',
  'disablePrimary',
  'secondaryToken',
  'revokeSecondary',
  'generatePublicKey',
  'enableSecondary',
  'updatePrimary',
  'promote',
  'disableSecondary',
  'secondaryDynamicFilter',
] as const;
export type OwnerCall = (typeof OWNER_CALLS)[number];
/** Sends one of OWNER_CALLS, its arguments as JSON, to the owner; resolves with its result or rejects with its ServiceError. */
export type SendToOwner = (call: OwnerCall, args: unknown[]) => Promise<unknown>;

/**
 * The writes a performance secondary forwards: a whole request its engine could not complete
 * locally, or the entity and alias a login on the secondary needs.
 */
export type ForwardCall = 'request' | 'login-entity';

/** What the primary answered a forwarded write with, and whether this secondary has applied it yet. */
export interface ForwardedAnswer {
  answer: Record<string, unknown>;
  /** The primary's log index once the write was committed. */
  index: number;
  /** False when the write had not come back through the log within `FORWARD_WAIT_MS`. */
  consistent: boolean;
}

export interface SecondaryEnableRequest {
  token: string;
  primaryApiAddr: string;
  caFile: string;
  caPath: string;
}

export interface UpdatePrimaryRequest extends SecondaryEnableRequest {
  /** Whether a `token` was sent (a blank one clears the primary). */
  tokenGiven: boolean;
  updatePrimaryAddrs: string[];
}
