import { sealKeyringFor, type ShareVerifier } from '@svc/seal';
import type { LinkRequest } from './cluster-link';
import type { ReplicationHost } from './host';
import { DR_SCOPE, performanceScope, type LogShipper, type SecondaryScope } from './log-shipper';
import { FILTER_PREFIX, type ModeStates } from './mode-state';
import { filteredPrefixes } from './paths-filter';
import type { PathsFilter, ReplicationMode } from './types';
import { LINK_PATHS } from './wal-wire';

/** A node of a secondary, as its last heartbeat reported it. */
export interface PrimaryPeer {
  node_id: string;
  api_address: string;
  cluster_address: string;
  lastHeartbeat: Date;
}

type PrimaryLinkHost = Pick<ReplicationHost, 'store' | 'keyring' | 'shareVerifier' | 'serveForwarded' | 'physical' | 'mounts' | 'namespaces'>;

/** The primary's side of the cluster link: what it answers its secondaries, and who beat to it. */
export class PrimaryLinkServer {
  private readonly peers = new Map<string, PrimaryPeer>();

  constructor(
    private readonly host: PrimaryLinkHost,
    private readonly states: ModeStates,
    /** The log shipper, while the log is open. */
    private readonly shipper: () => LogShipper | undefined,
  ) {}

  peer(mode: ReplicationMode, id: string): PrimaryPeer | undefined {
    return this.peers.get(`${mode}/${id}`);
  }

  /** Forgets the peer of secondary `id`, or of every secondary of `mode` (a new CA, or no longer a primary). */
  forget(mode: ReplicationMode, id?: string): void {
    if (id !== undefined) this.peers.delete(`${mode}/${id}`);
    else for (const key of [...this.peers.keys()]) if (key.startsWith(`${mode}/`)) this.peers.delete(key);
  }

  /** The primary's side of the link. */
  async serve(request: LinkRequest): Promise<Record<string, unknown>> {
    const state = this.states.loaded(request.mode);
    if (state?.mode !== 'primary') throw new Error('not a primary');
    switch (request.path) {
      case '/v1/replication/activate': {
        const publicKey = request.body.public_key;
        if (typeof publicKey !== 'string') throw new Error('public_key is required');
        const sealed = sealKeyringFor(publicKey, this.host.keyring());
        const known = state.secondaries.find((secondary) => secondary.id === request.secondaryId);
        // A secondary activating again (update-primary with a new token) starts without its old filter.
        if (known?.activated && request.mode === 'performance') await this.host.store.delete(FILTER_PREFIX + request.secondaryId);
        if (known && !known.activated) await this.states.save(request.mode, { ...state, secondaries: state.secondaries.map((secondary) => (secondary === known ? { ...secondary, activated: true } : secondary)) });
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
    const shipper = this.shipper();
    if (!shipper) throw new Error('replication storage is not open');
    return shipper.answer(request.path, request.body, () => this.scopeOf(request.mode, request.secondaryId), this.host.keyring().activeTerm);
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
}
