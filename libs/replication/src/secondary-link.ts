import { ServiceError } from '@svc/api-contract';
import { TREE_TYPES, type KeyClassifier, type ReplicationLog } from '@svc/replication-log';
import { checkShareVerifier, generateTransferKeyPair, openSealedKeyring, type SealedKeyring, type ShareVerifier } from '@svc/seal';
import { ClusterClient } from './cluster-link';
import type { ForwardCall, ForwardedAnswer, ReplicationHost } from './host';
import { LogFollower } from './log-follower';
import { SEEN_FILTER, SHARE_VERIFIER, type ModeStates } from './mode-state';
import type { PathsFilter, PrimaryLink, ReplicationMode, ReplicationState, SecondaryState } from './types';
import { LINK_PATHS } from './wal-wire';

/** How often a secondary sends its primary a heartbeat over the cluster link. */
export const HEARTBEAT_INTERVAL_MS = 2_000;
/** A peer not heard from for this long is shown disconnected (a loaded host delays a beat or two). */
const HEARTBEAT_STALE_MS = 5 * HEARTBEAT_INTERVAL_MS;
/** How long a secondary holds a forwarded write's answer until the write has come back (read-after-write). */
export const FORWARD_WAIT_MS = 10_000;

/** Whether a heartbeat at `at` is recent enough to show its peer connected (on either side of the link). */
export function heartbeatFresh(at: Date): boolean {
  return Date.now() - at.getTime() < HEARTBEAT_STALE_MS;
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

type SecondaryLinkHost = Pick<ReplicationHost, 'store' | 'logger' | 'apiAddr' | 'keyring' | 'adoptKeyring' | 'storageChanged' | 'localMountUuids' | 'physical'>;

/**
 * A secondary's side of the cluster link, for each mode it is a secondary in: the heartbeats to its
 * primary, the follower of the primary's log, and the writes it forwards there.
 */
export class SecondaryLinks {
  private readonly links = new Map<ReplicationMode, SecondaryLinkState>();
  private readonly followers = new Map<ReplicationMode, { follower: LogFollower; client: ClusterClient }>();

  constructor(
    private readonly host: SecondaryLinkHost,
    private readonly nodeId: string,
    private readonly classifier: KeyClassifier,
    /** The store's replication log, while it is open. */
    private readonly log: () => ReplicationLog | undefined,
    private readonly states: ModeStates,
  ) {}

  /** Starts the link of `mode` to the primary `state` names, after stopping one to another primary (or when it names none). */
  sync(mode: ReplicationMode, state: ReplicationState): void {
    const target = state.mode === 'secondary' ? state.primary : undefined;
    if (this.links.get(mode)?.target !== (target && JSON.stringify(target))) this.stop(mode);
    if (target && !this.links.has(mode)) this.start(mode, state as SecondaryState, target);
  }

  /** Whether the primary of `mode` answered a heartbeat lately. */
  connected(mode: ReplicationMode): boolean {
    const link = this.links.get(mode);
    return link !== undefined && link.connected && link.lastHeartbeat !== undefined && heartbeatFresh(link.lastHeartbeat);
  }

  lastHeartbeat(mode: ReplicationMode): Date | undefined {
    return this.links.get(mode)?.lastHeartbeat;
  }

  /** The paths filter the primary last reported for this secondary (performance). */
  filter(mode: ReplicationMode): PathsFilter | null {
    return this.links.get(mode)?.filter ?? null;
  }

  follower(mode: ReplicationMode): LogFollower | undefined {
    return this.followers.get(mode)?.follower;
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
   * On a performance secondary: sends a write of replicated data to the primary over the cluster
   * link, then waits (bounded) until the primary's log has brought it back here, so that a read
   * right after it sees it. An unreachable primary is a 503 naming it, not a hang.
   */
  async forwardToPrimary(call: ForwardCall, body: Record<string, unknown>): Promise<ForwardedAnswer> {
    const state = this.states.loaded('performance');
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

  /** Follows the primary's log on a secondary's link. */
  private startFollower(mode: ReplicationMode, client: ClusterClient, primary: PrimaryLink): void {
    const log = this.log();
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

  private start(mode: ReplicationMode, state: SecondaryState, primary: PrimaryLink): void {
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

  stop(mode: ReplicationMode): void {
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
}
