import { ServiceError } from '@svc/api-contract';
import type { ReplicationHost } from './host';
import { REPLICATION_MODES, type PrimaryState, type ReplicationMode, type ReplicationState, type SecondaryState } from './types';

/** A mode's state, under REPLICATION_STORAGE_PREFIX. */
export const replicationStateKey = (mode: ReplicationMode) => `${mode}/state`;
/** Barrier prefix of the replication state (local to this cluster, kept when a secondary's storage is wiped). */
export const REPLICATION_STORAGE_PREFIX = 'core/replication/';

export const PUBLIC_KEY = (mode: ReplicationMode) => `${mode}/public-key`;
export const FILTER_PREFIX = 'performance/paths-filter/';
export const DR_TOKEN_PREFIX_KEY = 'dr/operation-tokens/';
/** A DR secondary's copy of its primary's share verifier (DR operation tokens take the primary's shares). */
export const SHARE_VERIFIER = 'dr/share-verifier';
/** The paths filter a performance secondary's primary last reported. */
export const SEEN_FILTER = 'performance/seen-paths-filter';

/** Runs a mode's state once it is this process's (`before`: the one it replaces). */
export type AdoptState = (mode: ReplicationMode, state: ReplicationState, before: ReplicationState | undefined) => Promise<void>;

/**
 * The replication state of both modes: in storage (the barrier under `core/replication/`), and as
 * this process last loaded or saved it, which is what it runs.
 */
export class ModeStates {
  private readonly states = new Map<ReplicationMode, ReplicationState>();

  constructor(
    private readonly host: Pick<ReplicationHost, 'store'>,
    private readonly adopt: AdoptState,
  ) {}

  /** The state of `mode` as this process last loaded it (undefined while sealed or stopped). */
  loaded(mode: ReplicationMode): ReplicationState | undefined {
    return this.states.get(mode);
  }

  /** Reads the state of both modes and makes it this process's. */
  async load(): Promise<void> {
    for (const mode of REPLICATION_MODES) await this.set(mode, await this.read(mode));
  }

  /** Forgets what was loaded; the state stays in storage. */
  clear(): void {
    this.states.clear();
  }

  async read(mode: ReplicationMode): Promise<ReplicationState> {
    return (await this.host.store.getJSON<ReplicationState>(replicationStateKey(mode))) ?? { mode: 'disabled' };
  }

  async save(mode: ReplicationMode, state: ReplicationState): Promise<void> {
    await this.host.store.putJSON(replicationStateKey(mode), state);
    await this.set(mode, state);
  }

  private async set(mode: ReplicationMode, state: ReplicationState): Promise<void> {
    const before = this.states.get(mode);
    this.states.set(mode, state);
    await this.adopt(mode, state, before);
  }

  async requirePrimary(mode: ReplicationMode): Promise<PrimaryState> {
    const state = await this.read(mode);
    if (state.mode !== 'primary') throw ServiceError.badRequest(`this cluster is not a ${modeName(mode)} primary (it is ${state.mode})`);
    return state;
  }

  async requireSecondary(mode: ReplicationMode): Promise<SecondaryState> {
    const state = await this.read(mode);
    if (state.mode !== 'secondary') throw ServiceError.badRequest(`this cluster is not a ${modeName(mode)} secondary (it is ${state.mode})`);
    return state;
  }

  /** Every entry under `prefix` of the replication store, decrypted. */
  async entries(prefix: string): Promise<[string, Buffer][]> {
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

  async deleteTree(prefix: string): Promise<void> {
    for (const [key] of await this.entries(prefix)) await this.host.store.delete(key);
  }
}

export function modeName(mode: ReplicationMode): string {
  return mode === 'dr' ? 'DR' : 'performance';
}

export function checkClusterAddr(value: string, field: string): void {
  const withScheme = /^[a-z]+:\/\//.test(value) ? value : `https://${value}`;
  if (!URL.canParse(withScheme) || new URL(withScheme).protocol !== 'https:' || !new URL(withScheme).port) {
    throw ServiceError.badRequest(`${field} must be a cluster address such as https://primary.example.com:8201`);
  }
}
