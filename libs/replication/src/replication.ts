import { X509Certificate, createHash, createPrivateKey, generateKeyPairSync, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { ServiceError, type WrapInfo } from '@svc/http';
import { checkShareVerifier, decodePublicKey, generateTransferKeyPair, openSealedKeyring, sealKeyringFor, verifierAuthority, type SealedKeyring, type ShareAuthority, type ShareVerifier } from '@svc/seal';
import {
  DEFAULT_SHIPPER_LIMITS,
  forgetRemoteWal,
  KeyClassifier,
  lastRemoteWal,
  ReplicationLog,
  TREE_TYPES,
  type MerkleCorruptionReport,
  type ReindexOptions,
  type ShipperBufferLimits,
} from '@svc/replication-log';
import type { Keyring, Physical, StorageView } from '@svc/storage';
import { checkBundle, decryptBundle, encryptBundle, isJwtForm, readWrappingClaims, signWrappingToken, verifyWrappingToken, wrappingTokenMode } from './activation';
import { ClusterClient, ClusterListener, clusterServerName, type LinkRequest } from './cluster-link';
import { LogFollower } from './log-follower';
import { DR_SCOPE, LogShipper, performanceScope, type SecondaryScope } from './log-shipper';
import { checkPathsFilter, dynamicFilter, filteredPrefixes } from './paths-filter';
import { ClusterCa, type CertifiedKey } from './pki';
import { loadCaBundle, unwrapAtPrimary } from './unwrap';
import { LINK_PATHS } from './wal-wire';
import {
  REPLICATION_MODES,
  type ActivationBundle,
  type MountRef,
  type NamespaceRef,
  type PathsFilter,
  type PrimaryLink,
  type PrimaryState,
  type ReplicationMode,
  type ReplicationState,
  type SecondaryState,
} from './types';

/** How often a secondary sends its primary a heartbeat over the cluster link. */
export const HEARTBEAT_INTERVAL_MS = 2_000;
/** A peer not heard from for this long is shown disconnected (a loaded host delays a beat or two). */
const HEARTBEAT_STALE_MS = 5 * HEARTBEAT_INTERVAL_MS;
export const DEFAULT_SECONDARY_TOKEN_TTL = 30 * 60;
/** How long a secondary holds a forwarded write's answer until the write has come back (read-after-write). */
export const FORWARD_WAIT_MS = 10_000;
/** DR operation tokens: a prefix and 24 random bytes, as long as a service token (the OTP's length). */
const DR_TOKEN_PREFIX = 'svd.';
/** A mode's state, under REPLICATION_STORAGE_PREFIX. */
export const replicationStateKey = (mode: ReplicationMode) => `${mode}/state`;
/** Barrier prefix of the replication state (local to this cluster, kept when a secondary's storage is wiped). */
export const REPLICATION_STORAGE_PREFIX = 'core/replication/';

const PUBLIC_KEY = (mode: ReplicationMode) => `${mode}/public-key`;
const FILTER_PREFIX = 'performance/paths-filter/';
const DR_TOKEN_PREFIX_KEY = 'dr/operation-tokens/';
/** A DR secondary's copy of its primary's share verifier (DR operation tokens take the primary's shares). */
const SHARE_VERIFIER = 'dr/share-verifier';
/** The paths filter a performance secondary's primary last reported. */
const SEEN_FILTER = 'performance/seen-paths-filter';

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

interface PrimaryPeer {
  node_id: string;
  api_address: string;
  cluster_address: string;
  lastHeartbeat: Date;
}

interface SecondaryLinkState {
  client: ClusterClient;
  /** Its own session: a failed heartbeat closes the heartbeat's, which must not end a write in flight. */
  forwarding: ClusterClient;
  timer: NodeJS.Timeout;
  lastHeartbeat?: Date;
  connected: boolean;
  /** The paths filter the primary reported for this secondary (performance). */
  filter: PathsFilter | null;
  /** The paths filter last seen, as stored (JSON), to notice a change. */
  seenFilter?: string;
  /** The primary it beats to (JSON of its link), to notice a change of primary. */
  target: string;
  /** The primary's share verifier as last stored (DR), to store it again only when it changed. */
  shareVerifier?: string;
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

/**
 * Replication state of this cluster in both modes (disabled, primary, secondary), its activation
 * of secondaries, and the cluster link: the listener of a primary (mutual TLS, certificates from
 * its cluster CA) and the heartbeats of a secondary.
 */
export class Replication {
  private readonly states = new Map<ReplicationMode, ReplicationState>();
  private readonly cas = new Map<ReplicationMode, ClusterCa>();
  private readonly serverCerts = new Map<ReplicationMode, CertifiedKey>();
  private readonly peers = new Map<string, PrimaryPeer>();
  private readonly links = new Map<ReplicationMode, SecondaryLinkState>();
  private readonly listener: ClusterListener;
  readonly nodeId = randomUUID();
  private readonly classifier = new KeyClassifier();
  /** The store's replication log and Merkle index, open while either mode is not disabled. */
  private log?: ReplicationLog;
  private shipper?: LogShipper;
  private readonly followers = new Map<ReplicationMode, { follower: LogFollower; client: ClusterClient }>();
  /** Set while another process owns the cluster's replication. */
  private sendToOwner: SendToOwner | undefined;

  constructor(private readonly host: ReplicationHost) {
    this.sendToOwner = host.sendToOwner;
    this.listener = new ClusterListener({
      credentials: (mode) => {
        const state = this.states.get(mode);
        const server = this.serverCerts.get(mode);
        return state?.mode === 'primary' && server ? { server, caCert: state.ca.cert } : undefined;
      },
      accepts: (mode, id, serial) => {
        const state = this.states.get(mode);
        return state?.mode === 'primary' && state.secondaries.some((known) => known.id === id && known.serial === serial);
      },
      handle: (request) => this.serveLink(request),
      onRefused: (mode, id, reason) => this.host.logger.warn({ mode, secondary_id: id, reason }, 'cluster connection refused'),
    });
  }

  /** The cluster listener's bound host:port ('' when not listening). */
  get clusterListenerAddress(): string {
    return this.listener.address;
  }

  /** Whether this process owns its cluster's replication (see `ReplicationHost.sendToOwner`). */
  get owns(): boolean {
    return this.sendToOwner === undefined;
  }

  /**
   * Takes or gives up the ownership of the cluster's replication (a replication service holding,
   * or losing, the cluster's lease): what this process ran as one or the other stops, and the
   * state is loaded again as the other when the barrier is open (`open`).
   */
  async changeOwnership(owner: boolean, open: boolean): Promise<void> {
    await this.stop();
    this.sendToOwner = owner ? undefined : this.host.sendToOwner;
    if (open) await this.load();
  }

  /** Runs one of OWNER_CALLS another process of this cluster sent. */
  async serveOwnerCall(call: unknown, args: unknown): Promise<unknown> {
    if (!this.owns) throw ServiceError.unavailable('this process does not own the replication of its cluster');
    if (!OWNER_CALLS.includes(call as OwnerCall) || !Array.isArray(args)) throw ServiceError.badRequest(`replication: no call ${JSON.stringify(call)}`);
    const method = this[call as OwnerCall] as (...args: unknown[]) => Promise<unknown>;
    return method.apply(this, args);
  }

  private owner<T>(call: OwnerCall, ...args: unknown[]): Promise<T> {
    return this.sendToOwner!(call, args) as Promise<T>;
  }

  /** Reads the state of both modes (after unseal, or a change made through another gateway) and starts the link. */
  async load(): Promise<void> {
    for (const mode of REPLICATION_MODES) {
      const state = (await this.host.store.getJSON<ReplicationState>(replicationStateKey(mode))) ?? { mode: 'disabled' };
      await this.adopt(mode, state);
    }
  }

  /** Sealing or stopping: the link ends; the state stays in storage. */
  async stop(): Promise<void> {
    for (const mode of REPLICATION_MODES) this.stopLink(mode);
    await this.closeLog(false);
    this.states.clear();
    this.cas.clear();
    this.serverCerts.clear();
    await this.listener.close();
  }

  // --- status ---

  async status(mode: ReplicationMode): Promise<Record<string, unknown>> {
    const state = await this.read(mode);
    // A disabled mode has nothing to report that storage does not say.
    if (!this.owns && state.mode !== 'disabled') return this.owner('status', mode);
    const log = this.log;
    if (state.mode === 'primary') {
      return {
        mode: 'primary',
        cluster_id: state.clusterId,
        primary_cluster_addr: state.primaryClusterAddr,
        known_secondaries: state.secondaries.map((secondary) => secondary.id),
        secondaries: state.secondaries.map((secondary) => this.peerStatus(mode, secondary.id)),
        ...(log ? await this.primaryLogStatus(log) : {}),
      };
    }
    if (state.mode === 'secondary') {
      const link = this.links.get(mode);
      const connected = this.linkConnected(link);
      return {
        mode: 'secondary',
        cluster_id: state.clusterId,
        secondary_id: state.secondaryId,
        primary_cluster_addr: state.primary?.clusterAddr ?? '',
        known_primary_cluster_addrs: state.primary?.clusterAddrs ?? [],
        state: this.secondaryState(mode, state, connected),
        primaries: state.primary
          ? [
              {
                api_address: state.primary.apiAddr,
                cluster_address: state.primary.clusterAddr,
                connection_status: connected ? 'connected' : 'disconnected',
                last_heartbeat: link?.lastHeartbeat?.toISOString() ?? '',
              },
            ]
          : [],
        ...(log ? { last_remote_wal: await lastRemoteWal(this.host.physical), merkle_root: log.merkleRoot() } : {}),
      };
    }
    return { mode: 'disabled' };
  }

  private async primaryLogStatus(log: ReplicationLog): Promise<Record<string, unknown>> {
    const check = await log.index.lastCheck();
    return {
      last_wal: await log.lastIndex(),
      merkle_root: log.merkleRoot(),
      corrupted_merkle_tree: check?.corrupted ?? false,
      last_corruption_check_epoch: check?.epoch ?? '',
    };
  }

  /** `idle` without a primary; `connecting` while the link is down; else what the stream does. */
  private secondaryState(mode: ReplicationMode, state: SecondaryState, connected: boolean): string {
    if (!state.primary) return 'idle';
    const follower = this.followers.get(mode)?.follower;
    if (follower) return follower.state;
    // Not following yet (the log is opening): the link is all there is to say.
    return connected ? 'connected' : 'connecting';
  }

  /**
   * Resolves true once this secondary has applied its primary's log index `index` (the primary's
   * `last_wal` after a write), false after `timeoutMs` or when it follows no primary.
   */
  async waitForRemoteIndex(index: number, timeoutMs: number): Promise<boolean> {
    const following = this.followers.get('performance') ?? this.followers.get('dr');
    return following ? following.follower.waitForRemoteIndex(index, timeoutMs) : false;
  }

  /**
   * Whether this cluster writes `key` itself: everywhere but on a performance secondary, whose
   * replicated keys only its primary writes (they come back through the log). The barriers of
   * this process consult it before every write, and background work before it starts.
   */
  writable(key: string): boolean {
    if (this.states.get('performance')?.mode !== 'secondary') return true;
    if (!this.classifier.isShipped(key)) return true;
    // A mount made since the classifier last looked (a cubbyhole, a local mount) is looked up afresh.
    if (this.classifier.classify(key) === 'replicated') this.classifier.setLocalMounts(this.host.localMountUuids());
    return this.classifier.classify(key) === 'local';
  }

  /**
   * On a performance secondary: sends a write of replicated data to the primary over the cluster
   * link, then waits (bounded) until the primary's log has brought it back here, so that a read
   * right after it sees it. An unreachable primary is a 503 naming it, not a hang.
   */
  async forwardToPrimary(call: ForwardCall, body: Record<string, unknown>): Promise<ForwardedAnswer> {
    if (!this.owns) return this.owner('forwardToPrimary', call, body);
    const state = this.states.get('performance');
    const link = this.links.get('performance');
    if (state?.mode !== 'secondary' || !state.primary || !link) throw ServiceError.unavailable('this performance secondary has no primary to forward the write to');
    const primary = state.primary.clusterAddr;
    let answer: Record<string, unknown>;
    try {
      answer = await link.forwarding.call(primary, LINK_PATHS.forward, { call, ...body });
    } catch (err) {
      throw ServiceError.unavailable(`the performance primary at ${primary} is unreachable, so the write could not be forwarded to it (${err instanceof Error ? err.message : 'failed'})`);
    }
    const index = Number(answer.index);
    if (!Number.isInteger(index) || index < 0 || typeof answer.answer !== 'object' || answer.answer === null) throw ServiceError.badGateway('the performance primary answered a forwarded write malformed');
    const consistent = await this.waitForRemoteIndex(index, FORWARD_WAIT_MS);
    return { answer: answer.answer as Record<string, unknown>, index, consistent };
  }

  /** Document 3's merkle-check of this cluster's Merkle index. */
  merkleCheck(): Promise<MerkleCorruptionReport> {
    if (!this.owns) return this.owner('merkleCheck');
    return this.requireLog().merkleCheck();
  }

  /** Document 3's reindex: rebuilds the Merkle index from storage; returns its warnings. */
  reindex(options: ReindexOptions): Promise<string[]> {
    if (!this.owns) return this.owner('reindex', options);
    return this.requireLog().reindex(options);
  }

  private requireLog(): ReplicationLog {
    if (!this.log) throw ServiceError.badRequest('replication is disabled here: there is no Merkle index');
    return this.log;
  }

  /**
   * The modes as sys/health and seal-status report them, as this process last loaded them
   * (`unknown` while sealed: the state is kept in the barrier).
   */
  modes(): Record<ReplicationMode, string> {
    return { performance: this.states.get('performance')?.mode ?? 'unknown', dr: this.states.get('dr')?.mode ?? 'unknown' };
  }

  /** Whether this cluster is a DR secondary, which serves no client requests and runs no background work. */
  get isDrSecondary(): boolean {
    return this.states.get('dr')?.mode === 'secondary';
  }

  /** Whether this cluster is a performance secondary, whose writes of replicated data go to its primary. */
  get isPerformanceSecondary(): boolean {
    return this.states.get('performance')?.mode === 'secondary';
  }

  private peerStatus(mode: ReplicationMode, id: string): Record<string, unknown> {
    const peer = this.peers.get(`${mode}/${id}`);
    const fresh = peer !== undefined && Date.now() - peer.lastHeartbeat.getTime() < HEARTBEAT_STALE_MS;
    return {
      node_id: peer?.node_id ?? '',
      api_address: peer?.api_address ?? '',
      cluster_address: peer?.cluster_address ?? '',
      connection_status: fresh ? 'connected' : 'disconnected',
      last_heartbeat: peer?.lastHeartbeat.toISOString() ?? '',
    };
  }

  // --- primary ---

  async enablePrimary(mode: ReplicationMode, primaryClusterAddr: string): Promise<void> {
    if (!this.owns) return this.owner('enablePrimary', mode, primaryClusterAddr);
    const state = await this.read(mode);
    if (state.mode !== 'disabled') throw ServiceError.badRequest(`${modeName(mode)} replication is already enabled here (${state.mode}); disable it first`);
    if (mode === 'performance' && (await this.read('dr')).mode === 'secondary') throw ServiceError.badRequest('a DR secondary cannot be a performance primary');
    if (primaryClusterAddr) checkClusterAddr(primaryClusterAddr, 'primary_cluster_addr');
    if (!this.host.clusterListenAddress()) throw ServiceError.badRequest('this server has no cluster listener: set cluster_address in its listener stanza');
    // Every enable is a new replication set: secondaries of an earlier one cannot rejoin it.
    const clusterId = randomUUID();
    const ca = await ClusterCa.create(clusterId);
    await this.save(mode, { mode: 'primary', clusterId, ca: ca.ca, primaryClusterAddr, secondaries: [] });
    this.host.logger.info({ mode, cluster_id: clusterId }, 'replication primary enabled');
  }

  /** Primary → secondary of no primary yet (update-primary gives one); the cluster id stays. */
  async demotePrimary(mode: ReplicationMode): Promise<void> {
    if (!this.owns) return this.owner('demotePrimary', mode);
    const state = await this.requirePrimary(mode);
    // Its shares were the primary's of its replication set: they authorize its DR operation tokens until a new primary hands its own.
    if (mode === 'dr') await this.host.store.putJSON(SHARE_VERIFIER, await this.host.shareVerifier());
    await this.save(mode, { mode: 'secondary', clusterId: state.clusterId, secondaryId: '' });
    this.host.logger.info({ mode, cluster_id: state.clusterId }, 'replication primary demoted');
  }

  async disablePrimary(mode: ReplicationMode): Promise<void> {
    if (!this.owns) return this.owner('disablePrimary', mode);
    await this.requirePrimary(mode);
    if (mode === 'performance') await this.deleteTree(FILTER_PREFIX);
    await this.save(mode, { mode: 'disabled' });
    this.host.logger.info({ mode }, 'replication primary disabled');
  }

  /**
   * An activation token for secondary `id`: a client certificate for the cluster link and the
   * addresses of this primary, response-wrapped (the wrapping token in JWT form, carrying this
   * node's API address) or, given the secondary's public key, encrypted to it.
   */
  async secondaryToken(mode: ReplicationMode, id: string, ttl: number, secondaryPublicKey: string): Promise<{ wrapInfo?: WrapInfo; token?: string }> {
    if (!this.owns) return this.owner('secondaryToken', mode, id, ttl, secondaryPublicKey);
    if (!/^[A-Za-z0-9_.-]{1,128}$/.test(id)) throw ServiceError.badRequest('id must be 1 to 128 letters, digits, "_", "-" or "."');
    if (ttl <= 0) throw ServiceError.badRequest('ttl must be positive');
    if (secondaryPublicKey) {
      try {
        decodePublicKey(secondaryPublicKey);
      } catch {
        throw ServiceError.badRequest('secondary_public_key is not a public key made by secondary/generate-public-key');
      }
    }
    const state = await this.requirePrimary(mode);
    if (state.secondaries.some((secondary) => secondary.id === id)) throw ServiceError.badRequest(`a secondary with id "${id}" already exists; revoke it first`);
    const ca = this.caOf(mode, state);
    const client = await ca.clientCertificate(id);
    const serial = new X509Certificate(client.cert).serialNumber.toLowerCase();
    const bundle: ActivationBundle = {
      mode,
      cluster_id: state.clusterId,
      secondary_id: id,
      primary_api_addr: this.host.apiAddr(),
      primary_cluster_addrs: [state.primaryClusterAddr || this.host.clusterAddr(this.listener.address)],
      ca_cert: state.ca.cert,
      client_cert: client.cert,
      client_key: client.key,
    };
    await this.save(mode, { ...state, secondaries: [...state.secondaries, { id, serial, activated: false }] });
    if (secondaryPublicKey) return { token: encryptBundle(secondaryPublicKey, bundle) };
    const info = await this.host.wrap({ ...bundle }, ttl, `sys/replication/${mode}/primary/secondary-token`);
    const now = Math.floor(Date.now() / 1000);
    const jwt = signWrappingToken(ca, mode, { addr: bundle.primary_api_addr, accessor: info.accessor, jti: info.token, type: 'wrapping', iat: now, nbf: now - 30, exp: now + info.ttl });
    return { wrapInfo: { ...info, token: jwt } };
  }

  /**
   * The wrapping token inside a JWT-form activation token this primary signed, or the value as it
   * is (any other token). A JWT-form token with a bad signature or expired resolves to nothing.
   */
  resolveWrappingToken(value: string): string | undefined {
    if (!isJwtForm(value)) return value;
    const mode = wrappingTokenMode(value);
    const state = mode && this.states.get(mode);
    if (!mode || state?.mode !== 'primary') return undefined;
    return verifyWrappingToken(this.caOf(mode, state), value, Math.floor(Date.now() / 1000));
  }

  async revokeSecondary(mode: ReplicationMode, id: string): Promise<void> {
    if (!this.owns) return this.owner('revokeSecondary', mode, id);
    const state = await this.requirePrimary(mode);
    if (!state.secondaries.some((secondary) => secondary.id === id)) throw ServiceError.badRequest(`no secondary with id "${id}"`);
    await this.save(mode, { ...state, secondaries: state.secondaries.filter((secondary) => secondary.id !== id) });
    this.peers.delete(`${mode}/${id}`);
    this.listener.disconnect(mode, id);
    if (mode === 'performance') await this.host.store.delete(FILTER_PREFIX + id);
    this.host.logger.info({ mode, secondary_id: id }, 'replication secondary revoked');
  }

  // --- secondary ---

  /** A key pair whose public half a primary encrypts an activation token to (`secondary_public_key`). */
  async generatePublicKey(mode: ReplicationMode): Promise<string> {
    if (!this.owns) return this.owner('generatePublicKey', mode);
    const state = await this.read(mode);
    if (state.mode === 'primary') throw ServiceError.badRequest(`this cluster is a ${modeName(mode)} primary`);
    const { publicKey, privateKey } = generateKeyPairSync('x25519');
    await this.host.store.putJSON(PUBLIC_KEY(mode), { private_key: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString() });
    return publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
  }

  /**
   * Activation: the bundle from the primary (unwrapped there, or decrypted here), the link
   * checked and the primary's keyring received over it; only then is the storage wiped and the
   * keyring made this cluster's.
   */
  async enableSecondary(mode: ReplicationMode, request: SecondaryEnableRequest): Promise<void> {
    if (!this.owns) return this.owner('enableSecondary', mode, request);
    if (!request.token) throw ServiceError.badRequest('token is required');
    const state = await this.read(mode);
    if (state.mode !== 'disabled') throw ServiceError.badRequest(`${modeName(mode)} replication is already enabled here (${state.mode}); disable it first`);
    const other = REPLICATION_MODES.find((candidate) => candidate !== mode)!;
    if ((await this.read(other)).mode === 'secondary') throw ServiceError.badRequest(`this cluster is already a ${modeName(other)} secondary`);
    if (mode === 'dr' && (await this.read('performance')).mode === 'primary') throw ServiceError.badRequest('a performance primary cannot become a DR secondary');
    const bundle = await this.obtainBundle(mode, request);
    const { link, keyring, shareVerifier } = await this.activate(mode, bundle);
    const kept = (await this.entries('')).filter(([key]) => key !== PUBLIC_KEY(mode));
    await this.host.replaceStorage(keyring, kept);
    if (shareVerifier) await this.host.store.putJSON(SHARE_VERIFIER, shareVerifier);
    // Nothing of the primary's log is applied yet: the first read resynchronizes from the primary's Merkle index.
    await forgetRemoteWal(this.host.physical);
    await this.save(mode, { mode: 'secondary', clusterId: bundle.cluster_id, secondaryId: bundle.secondary_id, primary: link });
    this.host.logger.warn({ mode, cluster_id: bundle.cluster_id, secondary_id: bundle.secondary_id, primary: link.apiAddr }, 'replication secondary enabled: storage wiped');
  }

  /**
   * A new primary for this secondary: by a new activation token (a blank one forgets the
   * primary), or, performance only, by the first of `update_primary_addrs` that answers with this
   * secondary's certificate. The data stays.
   */
  async updatePrimary(mode: ReplicationMode, request: UpdatePrimaryRequest): Promise<void> {
    if (!this.owns) return this.owner('updatePrimary', mode, request);
    if (request.tokenGiven && request.updatePrimaryAddrs.length > 0) throw ServiceError.badRequest('token and update_primary_addrs are mutually exclusive');
    if (!request.tokenGiven && request.updatePrimaryAddrs.length === 0) throw ServiceError.badRequest('either token or update_primary_addrs is required');
    if (mode === 'dr' && request.updatePrimaryAddrs.length > 0) throw ServiceError.badRequest('update_primary_addrs is not allowed in DR mode: use a token');
    request.updatePrimaryAddrs.forEach((addr, index) => checkClusterAddr(addr, `update_primary_addrs[${index}]`));
    const state = await this.requireSecondary(mode);
    if (request.tokenGiven && !request.token) {
      await this.save(mode, { mode: 'secondary', clusterId: state.clusterId, secondaryId: state.secondaryId });
      return;
    }
    if (request.tokenGiven) {
      const bundle = await this.obtainBundle(mode, request);
      const { link, shareVerifier } = await this.activate(mode, bundle);
      if (shareVerifier) await this.host.store.putJSON(SHARE_VERIFIER, shareVerifier);
      await this.save(mode, { mode: 'secondary', clusterId: bundle.cluster_id, secondaryId: bundle.secondary_id, primary: link });
      return;
    }
    if (!state.primary) throw ServiceError.badRequest('this secondary has no primary credentials: use a token');
    const client = new ClusterClient(mode, state.primary.caCert, state.primary.clientCert);
    try {
      for (const addr of request.updatePrimaryAddrs) {
        const answer = await client.call(addr, '/v1/replication/ping', {}).catch(() => undefined);
        if (answer?.cluster_id === state.clusterId) {
          await this.save(mode, { ...state, primary: { ...state.primary, clusterAddr: addr, clusterAddrs: request.updatePrimaryAddrs } });
          return;
        }
      }
    } finally {
      client.close();
    }
    throw ServiceError.badRequest('no address of update_primary_addrs answered as this secondary\'s primary');
  }

  /**
   * Secondary → primary with a new cluster CA (other secondaries need new tokens). Refused while
   * the primary still answers heartbeats, since two primaries would then be active, unless forced.
   * A DR secondary's operation tokens are dropped: they authorized this promotion and nothing after.
   */
  async promote(mode: ReplicationMode, primaryClusterAddr: string, force: boolean): Promise<void> {
    if (!this.owns) return this.owner('promote', mode, primaryClusterAddr, force);
    const state = await this.requireSecondary(mode);
    if (primaryClusterAddr) checkClusterAddr(primaryClusterAddr, 'primary_cluster_addr');
    if (!force && this.linkConnected(this.links.get(mode))) {
      throw ServiceError.badRequest('the primary is still reachable: demote it first, or promote with force (two active primaries may lose data)');
    }
    if (!this.host.clusterListenAddress()) throw ServiceError.badRequest('this server has no cluster listener: set cluster_address in its listener stanza');
    const ca = await ClusterCa.create(state.clusterId);
    if (mode === 'dr') await this.deleteTree(DR_TOKEN_PREFIX_KEY);
    await this.save(mode, { mode: 'primary', clusterId: state.clusterId, ca: ca.ca, primaryClusterAddr, secondaries: [] });
    this.host.logger.warn({ mode, cluster_id: state.clusterId, force }, 'replication secondary promoted to primary');
  }

  /** A DR secondary's operation tokens are dropped with its mode, as on promotion. */
  async disableSecondary(mode: ReplicationMode): Promise<void> {
    if (!this.owns) return this.owner('disableSecondary', mode);
    await this.requireSecondary(mode);
    if (mode === 'dr') await this.deleteTree(DR_TOKEN_PREFIX_KEY);
    await this.save(mode, { mode: 'disabled' });
    this.host.logger.info({ mode }, 'replication secondary disabled');
  }

  // --- paths filters (performance) ---

  async writePathsFilter(id: string, mode: string, paths: unknown[]): Promise<void> {
    await this.requirePrimary('performance');
    await this.host.store.putJSON(FILTER_PREFIX + checkFilterId(id), checkPathsFilter(mode, paths));
  }

  async readPathsFilter(id: string): Promise<PathsFilter | null> {
    await this.requirePrimary('performance');
    return this.host.store.getJSON<PathsFilter>(FILTER_PREFIX + checkFilterId(id));
  }

  async deletePathsFilter(id: string): Promise<void> {
    await this.requirePrimary('performance');
    await this.host.store.delete(FILTER_PREFIX + checkFilterId(id));
  }

  async primaryDynamicFilter(id: string): Promise<ReturnType<typeof dynamicFilter>> {
    return dynamicFilter(await this.readPathsFilter(id), this.host.mounts(), this.namespacePaths());
  }

  /** As the secondary sees it: the filter the primary last reported over the link. */
  async secondaryDynamicFilter(id: string): Promise<ReturnType<typeof dynamicFilter>> {
    if (!this.owns) return this.owner('secondaryDynamicFilter', id);
    const state = await this.requireSecondary('performance');
    if (checkFilterId(id) !== state.secondaryId) throw ServiceError.badRequest(`this secondary's id is "${state.secondaryId}", not "${id}"`);
    return dynamicFilter(this.links.get('performance')?.filter ?? null, this.host.mounts(), this.namespacePaths());
  }

  private namespacePaths(): string[] {
    return this.host.namespaces().map((namespace) => namespace.path);
  }

  // --- DR operation tokens ---

  /** A new DR operation token (no TTL), stored only as its hash. */
  async createOperationToken(): Promise<string> {
    const token = DR_TOKEN_PREFIX + randomBytes(24).toString('base64url');
    await this.host.store.put(DR_TOKEN_PREFIX_KEY + tokenHash(token), Buffer.from(new Date().toISOString()));
    return token;
  }

  /** Refuses (403) a missing or unknown DR operation token. */
  async requireOperationToken(token: string): Promise<void> {
    if (!token) throw ServiceError.badRequest('dr_operation_token is required in DR mode');
    const hash = tokenHash(token);
    const stored = await this.host.store.list(DR_TOKEN_PREFIX_KEY);
    const found = stored.some((key) => key.length === hash.length && timingSafeEqual(Buffer.from(key), Buffer.from(hash)));
    if (!found) throw ServiceError.forbidden();
  }

  async deleteOperationToken(token: string): Promise<void> {
    await this.requireOperationToken(token);
    await this.host.store.delete(DR_TOKEN_PREFIX_KEY + tokenHash(token));
  }

  /**
   * What authorizes DR operation tokens: the primary's unseal (or recovery) shares, checked with
   * the verifier it handed over (a demoted primary: its own, which were its set's primary's).
   */
  drShareAuthority(): ShareAuthority {
    return verifierAuthority(async () => {
      const stored = await this.host.store.getJSON<ShareVerifier>(SHARE_VERIFIER);
      if (!stored) throw ServiceError.badRequest('this DR secondary has not received its primary\'s share verifier yet: it comes at activation and with heartbeats');
      return stored;
    }, "the primary's");
  }

  /** Generation of DR operation tokens is a DR secondary's. */
  async requireDrSecondary(): Promise<void> {
    await this.requireSecondary('dr');
  }

  // --- internals ---

  private async obtainBundle(mode: ReplicationMode, request: SecondaryEnableRequest): Promise<ActivationBundle> {
    let bundle: ActivationBundle;
    if (isJwtForm(request.token)) {
      const claims = readWrappingClaims(request.token);
      // Checked before the unwrap, which uses the token up.
      const tokenMode = wrappingTokenMode(request.token);
      if (tokenMode !== mode) throw ServiceError.badRequest(`the activation token is for ${modeName(tokenMode ?? mode)} replication, not ${modeName(mode)}`);
      const ca = await loadCaBundle(request.caFile, request.caPath);
      bundle = checkBundle(await unwrapAtPrimary(request.primaryApiAddr || claims.addr, request.token, ca));
    } else {
      const stored = await this.host.store.getJSON<{ private_key: string }>(PUBLIC_KEY(mode));
      if (!stored) throw ServiceError.badRequest('token is not a wrapped activation token, and no key was made with secondary/generate-public-key to decrypt it');
      bundle = decryptBundle(createPrivateKey(stored.private_key), request.token);
    }
    if (bundle.mode !== mode) throw ServiceError.badRequest(`the activation token is for ${modeName(bundle.mode)} replication, not ${modeName(mode)}`);
    if (request.primaryApiAddr) bundle.primary_api_addr = request.primaryApiAddr;
    return bundle;
  }

  /** Reaches the primary over the cluster link with the bundle's certificate; receives its keyring sealed to a key made here. */
  private async activate(mode: ReplicationMode, bundle: ActivationBundle): Promise<{ link: PrimaryLink; keyring: Keyring; shareVerifier?: ShareVerifier }> {
    const clientCert = { cert: bundle.client_cert, key: bundle.client_key };
    const client = new ClusterClient(mode, bundle.ca_cert, clientCert);
    const transfer = generateTransferKeyPair();
    const failures: string[] = [];
    try {
      for (const addr of bundle.primary_cluster_addrs) {
        try {
          const answer = await client.call(addr, '/v1/replication/activate', { public_key: transfer.publicKey });
          const keyring = openSealedKeyring(transfer.privateKey, answer.keyring as SealedKeyring);
          const link = { apiAddr: bundle.primary_api_addr, clusterAddrs: bundle.primary_cluster_addrs, clusterAddr: addr, caCert: bundle.ca_cert, clientCert };
          return { keyring, link, ...(mode === 'dr' ? { shareVerifier: checkShareVerifier(answer.share_verifier) } : {}) };
        } catch (err) {
          failures.push(`${addr}: ${err instanceof Error ? err.message : 'failed'}`);
        }
      }
    } finally {
      client.close();
    }
    throw ServiceError.badRequest(`could not reach the primary's cluster address (${failures.join('; ')})`);
  }

  /** The primary's side of the link. */
  private async serveLink(request: LinkRequest): Promise<Record<string, unknown>> {
    const state = this.states.get(request.mode);
    if (state?.mode !== 'primary') throw new Error('not a primary');
    switch (request.path) {
      case '/v1/replication/activate': {
        const publicKey = request.body.public_key;
        if (typeof publicKey !== 'string') throw new Error('public_key is required');
        const sealed = sealKeyringFor(publicKey, this.host.keyring());
        const known = state.secondaries.find((secondary) => secondary.id === request.secondaryId);
        // A secondary activating again (update-primary with a new token) starts without its old filter.
        if (known?.activated && request.mode === 'performance') await this.host.store.delete(FILTER_PREFIX + request.secondaryId);
        if (known && !known.activated) await this.save(request.mode, { ...state, secondaries: state.secondaries.map((secondary) => (secondary === known ? { ...secondary, activated: true } : secondary)) });
        return { cluster_id: state.clusterId, keyring: sealed, ...(await this.shareVerifierFor(request.mode)) };
      }
      case '/v1/replication/heartbeat': {
        const str = (value: unknown) => (typeof value === 'string' ? value : '');
        this.peers.set(`${request.mode}/${request.secondaryId}`, {
          node_id: str(request.body.node_id),
          api_address: str(request.body.api_address),
          cluster_address: request.remoteAddress,
          lastHeartbeat: new Date(),
        });
        const filter = request.mode === 'performance' ? await this.host.store.getJSON<PathsFilter>(FILTER_PREFIX + request.secondaryId) : null;
        return { cluster_id: state.clusterId, paths_filter: filter, ...(await this.shareVerifierFor(request.mode)) };
      }
      case '/v1/replication/ping':
        return { cluster_id: state.clusterId };
      case LINK_PATHS.forward: {
        if (request.mode !== 'performance') throw new Error('only performance secondaries forward writes');
        const { call, ...body } = request.body;
        if (call !== 'request' && call !== 'login-entity') throw new Error('call must be "request" or "login-entity"');
        const answer = await this.host.serveForwarded(call, body);
        // Read after the write committed: at least its own entry.
        return { answer, index: (await this.host.physical?.log.lastIndex()) ?? 0 };
      }
      case LINK_PATHS.keyring: {
        const publicKey = request.body.public_key;
        if (typeof publicKey !== 'string') throw new Error('public_key is required');
        return { keyring: sealKeyringFor(publicKey, this.host.keyring()) };
      }
      default:
        return this.serveData(request);
    }
  }

  /** The link's calls that carry storage: the log (streaming) and the Merkle answers (resync). */
  private async serveData(request: LinkRequest): Promise<Record<string, unknown>> {
    if (!this.shipper) throw new Error('replication storage is not open');
    return this.shipper.answer(request.path, request.body, () => this.scopeOf(request.mode, request.secondaryId), this.host.keyring().activeTerm);
  }

  /** A DR secondary is handed this cluster's share verifier, at activation and with every heartbeat (a rekey changes it). */
  private async shareVerifierFor(mode: ReplicationMode): Promise<{ share_verifier?: ShareVerifier }> {
    return mode === 'dr' ? { share_verifier: await this.host.shareVerifier() } : {};
  }

  /** What a secondary receives (see SecondaryScope); a performance secondary's paths filter is applied as entries are shipped. */
  private async scopeOf(mode: ReplicationMode, secondaryId: string): Promise<SecondaryScope> {
    if (mode === 'dr') return DR_SCOPE;
    const filter = await this.host.store.getJSON<PathsFilter>(FILTER_PREFIX + secondaryId);
    return performanceScope(filteredPrefixes(filter, this.host.mounts(), this.host.namespaces()));
  }

  private async read(mode: ReplicationMode): Promise<ReplicationState> {
    return (await this.host.store.getJSON<ReplicationState>(replicationStateKey(mode))) ?? { mode: 'disabled' };
  }

  private async save(mode: ReplicationMode, state: ReplicationState): Promise<void> {
    await this.host.store.putJSON(replicationStateKey(mode), state);
    await this.adopt(mode, state);
  }

  /** Makes `state` this node's: starts or stops the listener and the heartbeats. */
  private async adopt(mode: ReplicationMode, state: ReplicationState): Promise<void> {
    const before = this.states.get(mode);
    this.states.set(mode, state);
    if (before?.mode === 'primary' && (state.mode !== 'primary' || before.ca.cert !== state.ca.cert)) {
      this.cas.delete(mode);
      this.serverCerts.delete(mode);
      this.listener.reset(mode);
      for (const key of [...this.peers.keys()]) if (key.startsWith(`${mode}/`)) this.peers.delete(key);
    }
    // Elsewhere than the owner the state is all there is: what this process may write, the modes, activation tokens' signatures.
    if (!this.owns) return;
    if (state.mode === 'primary' && !this.serverCerts.has(mode)) this.serverCerts.set(mode, await this.caOf(mode, state).serverCertificate(clusterServerName(mode)));
    const primaries = REPLICATION_MODES.some((candidate) => this.states.get(candidate)?.mode === 'primary');
    const address = this.host.clusterListenAddress();
    if (primaries && address && !this.listener.listening) {
      await this.listener.listen(address);
      this.host.logger.info({ cluster_address: this.listener.address }, 'cluster listener started');
    } else if (!primaries && this.listener.listening) await this.listener.close();
    await this.syncLog();
    const target = state.mode === 'secondary' ? state.primary : undefined;
    if (this.links.get(mode)?.target !== (target && JSON.stringify(target))) this.stopLink(mode);
    if (target && !this.links.has(mode)) this.startLink(mode, state as SecondaryState, target);
  }

  /**
   * The store's log is on, and its Merkle index open and kept by the shipper's timer, while
   * either mode is a primary or a secondary.
   */
  private async syncLog(): Promise<void> {
    const physical = this.host.physical;
    const modes = REPLICATION_MODES.map((mode) => this.states.get(mode)?.mode ?? 'disabled');
    if (modes.every((mode) => mode === 'disabled')) return this.closeLog(true);
    this.classifier.setLocalMounts(this.host.localMountUuids());
    this.log ??= await ReplicationLog.open(physical, this.classifier, this.host.shipperLimits ?? DEFAULT_SHIPPER_LIMITS);
    // On a secondary too: its own log is trimmed and its index flushed by the same timer.
    this.shipper ??= new LogShipper(physical, this.log, this.classifier, () => this.host.localMountUuids(), (err) =>
      this.host.logger.warn({ err: err instanceof Error ? err.message : 'failed' }, 'replication log upkeep failed; retrying'),
    );
  }

  /** Stops the shipper and forgets the log (switching logging off when replication is disabled). */
  private async closeLog(loggingOff: boolean): Promise<void> {
    this.shipper?.stop();
    this.shipper = undefined;
    if (this.log && loggingOff) await this.host.physical.log.setLogging(false);
    this.log = undefined;
  }

  /** Follows the primary's log on a secondary's link. */
  private startFollower(mode: ReplicationMode, client: ClusterClient, primary: PrimaryLink): void {
    const log = this.log;
    const physical = this.host.physical;
    if (!log) return;
    const call = (path: string, body: Record<string, unknown>) => client.call(primary.clusterAddr, path, body);
    const follower = new LogFollower({
        physical,
        index: log.index,
        trees: mode === 'dr' ? TREE_TYPES : ['replicated'],
        call,
        ensureKeyring: async (term) => {
          if (!(term > this.host.keyring().activeTerm)) return;
          const transfer = generateTransferKeyPair();
          const answer = await call(LINK_PATHS.keyring, { public_key: transfer.publicKey });
          await this.host.adoptKeyring(openSealedKeyring(transfer.privateKey, answer.keyring as SealedKeyring));
          this.host.logger.info({ mode, term }, "replication: the primary's new keyring term received");
        },
        changed: async (keys) => {
          await this.host.storageChanged(keys);
          // The mount tables may have changed: the keys that follow are classed by the new ones.
          this.classifier.setLocalMounts(this.host.localMountUuids());
        },
        logger: { info: (obj, msg) => this.host.logger.info({ mode, ...obj }, msg), warn: (obj, msg) => this.host.logger.warn({ mode, ...obj }, msg) },
    });
    this.followers.set(mode, { follower, client });
  }

  private startLink(mode: ReplicationMode, state: SecondaryState, primary: PrimaryLink): void {
    const client = new ClusterClient(mode, primary.caCert, primary.clientCert);
    const forwarding = new ClusterClient(mode, primary.caCert, primary.clientCert);
    const link: SecondaryLinkState = { client, forwarding, connected: false, filter: null, target: JSON.stringify(primary), timer: setInterval(() => void beat(), HEARTBEAT_INTERVAL_MS) };
    link.timer.unref();
    const beat = async () => {
      try {
        const answer = await client.call(primary.clusterAddr, '/v1/replication/heartbeat', { node_id: this.nodeId, api_address: this.host.apiAddr() });
        if (answer.cluster_id !== state.clusterId) throw new Error('the primary answered with another cluster id');
        link.connected = true;
        link.lastHeartbeat = new Date();
        if (mode === 'performance') await this.keepPathsFilter(link, answer.paths_filter);
        if (mode === 'dr') await this.keepShareVerifier(link, answer.share_verifier);
      } catch (err) {
        if (link.connected) this.host.logger.warn({ mode, primary: primary.clusterAddr, err: err instanceof Error ? err.message : 'failed' }, 'replication heartbeat failed');
        link.connected = false;
        client.close();
      }
    };
    this.links.set(mode, link);
    void beat();
    // Its own session: a failed heartbeat closes the heartbeat's, and the stream reconnects on its own.
    this.startFollower(mode, new ClusterClient(mode, primary.caCert, primary.clientCert), primary);
  }

  /**
   * Notes the paths filter a heartbeat reports; when it differs from the one last seen (kept in
   * storage, so a change made while this process was down counts too), the follower resyncs: what
   * this secondary holds was shipped under the old one, and the Merkle answers follow the new one.
   */
  private async keepPathsFilter(link: SecondaryLinkState, value: unknown): Promise<void> {
    const filter = (value as PathsFilter | null) ?? null;
    link.filter = filter;
    const text = JSON.stringify(filter);
    link.seenFilter ??= JSON.stringify(await this.host.store.getJSON<PathsFilter>(SEEN_FILTER));
    if (text === link.seenFilter) return;
    await this.host.store.putJSON(SEEN_FILTER, filter);
    link.seenFilter = text;
    this.followers.get('performance')?.follower.resyncSoon();
  }

  /** Stores the primary's share verifier from a heartbeat when it differs from the one stored (a rekey there). */
  private async keepShareVerifier(link: SecondaryLinkState, value: unknown): Promise<void> {
    const verifier = checkShareVerifier(value);
    const text = JSON.stringify(verifier);
    link.shareVerifier ??= JSON.stringify(await this.host.store.getJSON<ShareVerifier>(SHARE_VERIFIER));
    if (text === link.shareVerifier) return;
    await this.host.store.putJSON(SHARE_VERIFIER, verifier);
    link.shareVerifier = text;
    this.host.logger.info({}, "replication: the primary's share verifier changed (a rekey there); DR operation tokens now take its new shares");
  }

  private stopLink(mode: ReplicationMode): void {
    const link = this.links.get(mode);
    if (!link) return;
    clearInterval(link.timer);
    link.client.close();
    link.forwarding.close();
    this.links.delete(mode);
    const following = this.followers.get(mode);
    this.followers.delete(mode);
    // Closing its session ends a read of the log in flight, so the follower stops at once.
    following?.client.close();
    void following?.follower.stop();
  }

  private linkConnected(link: SecondaryLinkState | undefined): boolean {
    return link !== undefined && link.connected && link.lastHeartbeat !== undefined && Date.now() - link.lastHeartbeat.getTime() < HEARTBEAT_STALE_MS;
  }

  private caOf(mode: ReplicationMode, state: PrimaryState): ClusterCa {
    let ca = this.cas.get(mode);
    if (!ca || ca.ca.cert !== state.ca.cert) {
      ca = ClusterCa.load(state.ca);
      this.cas.set(mode, ca);
    }
    return ca;
  }

  private async requirePrimary(mode: ReplicationMode): Promise<PrimaryState> {
    const state = await this.read(mode);
    if (state.mode !== 'primary') throw ServiceError.badRequest(`this cluster is not a ${modeName(mode)} primary (it is ${state.mode})`);
    return state;
  }

  private async requireSecondary(mode: ReplicationMode): Promise<SecondaryState> {
    const state = await this.read(mode);
    if (state.mode !== 'secondary') throw ServiceError.badRequest(`this cluster is not a ${modeName(mode)} secondary (it is ${state.mode})`);
    return state;
  }

  /** Every entry under `prefix` of the replication store, decrypted. */
  private async entries(prefix: string): Promise<[string, Buffer][]> {
    const found: [string, Buffer][] = [];
    for (const name of await this.host.store.list(prefix)) {
      if (name.endsWith('/')) found.push(...(await this.entries(prefix + name)));
      else {
        const value = await this.host.store.get(prefix + name);
        if (value) found.push([prefix + name, value]);
      }
    }
    return found;
  }

  private async deleteTree(prefix: string): Promise<void> {
    for (const [key] of await this.entries(prefix)) await this.host.store.delete(key);
  }
}

function modeName(mode: ReplicationMode): string {
  return mode === 'dr' ? 'DR' : 'performance';
}

function checkClusterAddr(value: string, field: string): void {
  const withScheme = /^[a-z]+:\/\//.test(value) ? value : `https://${value}`;
  if (!URL.canParse(withScheme) || new URL(withScheme).protocol !== 'https:' || !new URL(withScheme).port) {
    throw ServiceError.badRequest(`${field} must be a cluster address such as https://primary.example.com:8201`);
  }
}

function checkFilterId(id: string): string {
  if (!/^[A-Za-z0-9_.-]{1,128}$/.test(id)) throw ServiceError.badRequest('id must be 1 to 128 letters, digits, "_", "-" or "."');
  return id;
}

function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

