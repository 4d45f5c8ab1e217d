import { ServiceError } from '@svc/api-contract';
import { DEFAULT_SHIPPER_LIMITS, KeyClassifier, ReplicationLog } from '@svc/replication-log';
import { ClusterListener, clusterServerName } from './cluster-link';
import type { ReplicationHost } from './host';
import { LogShipper } from './log-shipper';
import type { ModeStates } from './mode-state';
import { ClusterCa, type CertifiedKey } from './pki';
import { PrimaryLinkServer } from './primary-link';
import { SecondaryLinks } from './secondary-link';
import { REPLICATION_MODES, type PrimaryState, type ReplicationMode, type ReplicationState } from './types';

/**
 * What the owner of the cluster's replication runs for the states it loaded: the cluster listener
 * of a primary (mutual TLS, certificates from its cluster CA), the links of a secondary, and the
 * store's replication log and Merkle index.
 */
export class ReplicationRuntime {
  private readonly cas = new Map<ReplicationMode, ClusterCa>();
  private readonly serverCerts = new Map<ReplicationMode, CertifiedKey>();
  readonly listener: ClusterListener;
  readonly classifier = new KeyClassifier();
  /** The store's replication log and Merkle index, open while either mode is not disabled. */
  private openLog?: ReplicationLog;
  private shipper?: LogShipper;
  readonly primaryLink: PrimaryLinkServer;
  readonly secondaryLinks: SecondaryLinks;

  constructor(
    private readonly host: ReplicationHost,
    private readonly states: ModeStates,
    nodeId: string,
    /** Whether this process owns its cluster's replication (else it runs none of it). */
    private readonly owns: () => boolean,
  ) {
    this.primaryLink = new PrimaryLinkServer(host, states, () => this.shipper);
    this.secondaryLinks = new SecondaryLinks(host, nodeId, this.classifier, () => this.openLog, states);
    this.listener = new ClusterListener({
      credentials: (mode) => {
        const state = this.states.loaded(mode);
        const server = this.serverCerts.get(mode);
        return state?.mode === 'primary' && server ? { server, caCert: state.ca.cert } : undefined;
      },
      accepts: (mode, id, serial) => {
        const state = this.states.loaded(mode);
        return state?.mode === 'primary' && state.secondaries.some((known) => known.id === id && known.serial === serial);
      },
      handle: (request) => this.primaryLink.serve(request),
      onRefused: (mode, id, reason) => this.host.logger.warn({ mode, secondary_id: id, reason }, 'cluster connection refused'),
    });
  }

  get log(): ReplicationLog | undefined {
    return this.openLog;
  }

  requireLog(): ReplicationLog {
    if (!this.openLog) throw ServiceError.badRequest('replication is disabled here: there is no Merkle index');
    return this.openLog;
  }

  /** Makes `state` this node's: starts or stops the listener and the heartbeats. */
  async adopt(mode: ReplicationMode, state: ReplicationState, before: ReplicationState | undefined): Promise<void> {
    if (before?.mode === 'primary' && (state.mode !== 'primary' || before.ca.cert !== state.ca.cert)) {
      this.cas.delete(mode);
      this.serverCerts.delete(mode);
      this.listener.reset(mode);
      this.primaryLink.forget(mode);
    }
    // Elsewhere than the owner the state is all there is: what this process may write, the modes, activation tokens' signatures.
    if (!this.owns()) return;
    if (state.mode === 'primary' && !this.serverCerts.has(mode)) this.serverCerts.set(mode, await this.caOf(mode, state).serverCertificate(clusterServerName(mode)));
    const primaries = REPLICATION_MODES.some((candidate) => this.states.loaded(candidate)?.mode === 'primary');
    const address = this.host.clusterListenAddress();
    if (primaries && address && !this.listener.listening) {
      await this.listener.listen(address);
      this.host.logger.info({ cluster_address: this.listener.address }, 'cluster listener started');
    } else if (!primaries && this.listener.listening) await this.listener.close();
    await this.syncLog();
    this.secondaryLinks.sync(mode, state);
  }

  /** Sealing or stopping: the link ends; the state stays in storage. */
  async stop(): Promise<void> {
    for (const mode of REPLICATION_MODES) this.secondaryLinks.stop(mode);
    await this.closeLog(false);
    this.states.clear();
    this.cas.clear();
    this.serverCerts.clear();
    await this.listener.close();
  }

  /**
   * Whether this cluster writes `key` itself: everywhere but on a performance secondary, whose
   * replicated keys only its primary writes (they come back through the log). The barriers of
   * this process consult it before every write, and background work before it starts.
   */
  writable(key: string): boolean {
    if (this.states.loaded('performance')?.mode !== 'secondary') return true;
    if (!this.classifier.isShipped(key)) return true;
    // A mount made since the classifier last looked (a cubbyhole, a local mount) is looked up afresh.
    if (this.classifier.classify(key) === 'replicated') this.classifier.setLocalMounts(this.host.localMountUuids());
    return this.classifier.classify(key) === 'local';
  }

  caOf(mode: ReplicationMode, state: PrimaryState): ClusterCa {
    let ca = this.cas.get(mode);
    if (!ca || ca.ca.cert !== state.ca.cert) {
      ca = ClusterCa.load(state.ca);
      this.cas.set(mode, ca);
    }
    return ca;
  }

  /**
   * The store's log is on, and its Merkle index open and kept by the shipper's timer, while
   * either mode is a primary or a secondary.
   */
  private async syncLog(): Promise<void> {
    const physical = this.host.physical;
    const modes = REPLICATION_MODES.map((mode) => this.states.loaded(mode)?.mode ?? 'disabled');
    if (modes.every((mode) => mode === 'disabled')) return this.closeLog(true);
    this.classifier.setLocalMounts(this.host.localMountUuids());
    this.openLog ??= await ReplicationLog.open(physical, this.classifier, this.host.shipperLimits ?? DEFAULT_SHIPPER_LIMITS);
    // On a secondary too: its own log is trimmed and its index flushed by the same timer.
    this.shipper ??= new LogShipper(physical, this.openLog, this.classifier, () => this.host.localMountUuids(), (err) =>
      this.host.logger.warn({ err: err instanceof Error ? err.message : 'failed' }, 'replication log upkeep failed; retrying'),
    );
  }

  /** Stops the shipper and forgets the log (switching logging off when replication is disabled). */
  private async closeLog(loggingOff: boolean): Promise<void> {
    this.shipper?.stop();
    this.shipper = undefined;
    if (this.openLog && loggingOff) await this.host.physical.log.setLogging(false);
    this.openLog = undefined;
  }
}
