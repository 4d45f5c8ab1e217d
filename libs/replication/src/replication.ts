import { randomUUID } from 'node:crypto';
import { ServiceError, type WrapInfo } from '@svc/api-contract';
import type { MerkleCorruptionReport, ReindexOptions } from '@svc/replication-log';
import type { ShareAuthority } from '@svc/seal';
import { DrOperationTokens } from './dr-operation-tokens';
import { OWNER_CALLS, type ForwardCall, type ForwardedAnswer, type OwnerCall, type ReplicationHost, type SecondaryEnableRequest, type SendToOwner, type UpdatePrimaryRequest } from './host';
import { ModeStates } from './mode-state';
import type { dynamicFilter } from './paths-filter';
import { PathsFilterStore } from './paths-filter-store';
import { PrimaryOperations } from './primary-operations';
import { ReplicationRuntime } from './runtime';
import { SecondaryOperations } from './secondary-operations';
import { replicationStatus } from './status';
import type { PathsFilter, ReplicationMode } from './types';

// The lib's index exports these through this module.
export { OWNER_CALLS, type ForwardCall, type ForwardedAnswer, type OwnerCall, type ReplicationHost, type SecondaryEnableRequest, type SendToOwner, type UpdatePrimaryRequest } from './host';
export { REPLICATION_STORAGE_PREFIX, replicationStateKey } from './mode-state';
export { DEFAULT_SECONDARY_TOKEN_TTL } from './primary-operations';
export { FORWARD_WAIT_MS, HEARTBEAT_INTERVAL_MS } from './secondary-link';

/**
 * Replication state of this cluster in both modes (disabled, primary, secondary), its activation
 * of secondaries, and the cluster link: the listener of a primary (mutual TLS, certificates from
 * its cluster CA) and the heartbeats of a secondary. In a process that does not own the cluster's
 * replication, the calls of OWNER_CALLS go to the owner; the rest is done by the parts below.
 */
export class Replication {
  readonly nodeId = randomUUID();
  private readonly states: ModeStates;
  private readonly runtime: ReplicationRuntime;
  private readonly primary: PrimaryOperations;
  private readonly secondary: SecondaryOperations;
  private readonly filters: PathsFilterStore;
  private readonly drTokens: DrOperationTokens;
  /** Set while another process owns the cluster's replication. */
  private sendToOwner: SendToOwner | undefined;

  constructor(private readonly host: ReplicationHost) {
    this.sendToOwner = host.sendToOwner;
    this.states = new ModeStates(host, (mode, state, before) => this.runtime.adopt(mode, state, before));
    this.runtime = new ReplicationRuntime(host, this.states, this.nodeId, () => this.owns);
    this.primary = new PrimaryOperations(host, this.states, this.runtime);
    this.secondary = new SecondaryOperations(host, this.states, this.runtime.secondaryLinks);
    this.filters = new PathsFilterStore(host, this.states, this.runtime.secondaryLinks);
    this.drTokens = new DrOperationTokens(host, this.states);
  }

  /** The cluster listener's bound host:port ('' when not listening). */
  get clusterListenerAddress(): string {
    return this.runtime.listener.address;
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
  load(): Promise<void> {
    return this.states.load();
  }

  /** Sealing or stopping: the link ends; the state stays in storage. */
  stop(): Promise<void> {
    return this.runtime.stop();
  }

  // --- status ---

  async status(mode: ReplicationMode): Promise<Record<string, unknown>> {
    const state = await this.states.read(mode);
    // A disabled mode has nothing to report that storage does not say.
    if (!this.owns && state.mode !== 'disabled') return this.owner('status', mode);
    return replicationStatus(this.runtime, this.host.physical, mode, state);
  }

  waitForRemoteIndex(index: number, timeoutMs: number): Promise<boolean> {
    return this.runtime.secondaryLinks.waitForRemoteIndex(index, timeoutMs);
  }

  writable(key: string): boolean {
    return this.runtime.writable(key);
  }

  async forwardToPrimary(call: ForwardCall, body: Record<string, unknown>): Promise<ForwardedAnswer> {
    if (!this.owns) return this.owner('forwardToPrimary', call, body);
    return this.runtime.secondaryLinks.forwardToPrimary(call, body);
  }

  /** Document 3's merkle-check of this cluster's Merkle index. */
  merkleCheck(): Promise<MerkleCorruptionReport> {
    if (!this.owns) return this.owner('merkleCheck');
    return this.runtime.requireLog().merkleCheck();
  }

  /** Document 3's reindex: rebuilds the Merkle index from storage; returns its warnings. */
  reindex(options: ReindexOptions): Promise<string[]> {
    if (!this.owns) return this.owner('reindex', options);
    return this.runtime.requireLog().reindex(options);
  }

  /**
   * The modes as sys/health and seal-status report them, as this process last loaded them
   * (`unknown` while sealed: the state is kept in the barrier).
   */
  modes(): Record<ReplicationMode, string> {
    return { performance: this.states.loaded('performance')?.mode ?? 'unknown', dr: this.states.loaded('dr')?.mode ?? 'unknown' };
  }

  /** Whether this cluster is a DR secondary, which serves no client requests and runs no background work. */
  get isDrSecondary(): boolean {
    return this.states.loaded('dr')?.mode === 'secondary';
  }

  /** Whether this cluster is a performance secondary, whose writes of replicated data go to its primary. */
  get isPerformanceSecondary(): boolean {
    return this.states.loaded('performance')?.mode === 'secondary';
  }

  // --- primary ---

  async enablePrimary(mode: ReplicationMode, primaryClusterAddr: string): Promise<void> {
    if (!this.owns) return this.owner('enablePrimary', mode, primaryClusterAddr);
    return this.primary.enablePrimary(mode, primaryClusterAddr);
  }

  async demotePrimary(mode: ReplicationMode): Promise<void> {
    if (!this.owns) return this.owner('demotePrimary', mode);
    return this.primary.demotePrimary(mode);
  }

  async disablePrimary(mode: ReplicationMode): Promise<void> {
    if (!this.owns) return this.owner('disablePrimary', mode);
    return this.primary.disablePrimary(mode);
  }

  async secondaryToken(mode: ReplicationMode, id: string, ttl: number, secondaryPublicKey: string): Promise<{ wrapInfo?: WrapInfo; token?: string }> {
    if (!this.owns) return this.owner('secondaryToken', mode, id, ttl, secondaryPublicKey);
    return this.primary.secondaryToken(mode, id, ttl, secondaryPublicKey);
  }

  resolveWrappingToken(value: string): string | undefined {
    return this.primary.resolveWrappingToken(value);
  }

  async revokeSecondary(mode: ReplicationMode, id: string): Promise<void> {
    if (!this.owns) return this.owner('revokeSecondary', mode, id);
    return this.primary.revokeSecondary(mode, id);
  }

  // --- secondary ---

  async generatePublicKey(mode: ReplicationMode): Promise<string> {
    if (!this.owns) return this.owner('generatePublicKey', mode);
    return this.secondary.generatePublicKey(mode);
  }

  async enableSecondary(mode: ReplicationMode, request: SecondaryEnableRequest): Promise<void> {
    if (!this.owns) return this.owner('enableSecondary', mode, request);
    return this.secondary.enableSecondary(mode, request);
  }

  async updatePrimary(mode: ReplicationMode, request: UpdatePrimaryRequest): Promise<void> {
    if (!this.owns) return this.owner('updatePrimary', mode, request);
    return this.secondary.updatePrimary(mode, request);
  }

  async promote(mode: ReplicationMode, primaryClusterAddr: string, force: boolean): Promise<void> {
    if (!this.owns) return this.owner('promote', mode, primaryClusterAddr, force);
    return this.secondary.promote(mode, primaryClusterAddr, force);
  }

  async disableSecondary(mode: ReplicationMode): Promise<void> {
    if (!this.owns) return this.owner('disableSecondary', mode);
    return this.secondary.disableSecondary(mode);
  }

  // --- paths filters (performance) ---

  writePathsFilter(id: string, mode: string, paths: unknown[]): Promise<void> {
    return this.filters.writePathsFilter(id, mode, paths);
  }

  readPathsFilter(id: string): Promise<PathsFilter | null> {
    return this.filters.readPathsFilter(id);
  }

  deletePathsFilter(id: string): Promise<void> {
    return this.filters.deletePathsFilter(id);
  }

  primaryDynamicFilter(id: string): Promise<ReturnType<typeof dynamicFilter>> {
    return this.filters.primaryDynamicFilter(id);
  }

  async secondaryDynamicFilter(id: string): Promise<ReturnType<typeof dynamicFilter>> {
    if (!this.owns) return this.owner('secondaryDynamicFilter', id);
    return this.filters.secondaryDynamicFilter(id);
  }

  // --- DR operation tokens ---

  createOperationToken(): Promise<string> {
    return this.drTokens.createOperationToken();
  }

  requireOperationToken(token: string): Promise<void> {
    return this.drTokens.requireOperationToken(token);
  }

  deleteOperationToken(token: string): Promise<void> {
    return this.drTokens.deleteOperationToken(token);
  }

  drShareAuthority(): ShareAuthority {
    return this.drTokens.drShareAuthority();
  }

  requireDrSecondary(): Promise<void> {
    return this.drTokens.requireDrSecondary();
  }
}
