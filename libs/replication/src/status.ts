import { lastRemoteWal, type ReplicationLog } from '@svc/replication-log';
import type { Physical } from '@svc/storage';
import type { LogFollower } from './log-follower';
import type { PrimaryPeer } from './primary-link';
import type { ReplicationRuntime } from './runtime';
import { heartbeatFresh } from './secondary-link';
import type { ReplicationMode, ReplicationState, SecondaryState } from './types';

/** The status of this cluster in `mode` (its state as loaded), with what the owner's runtime knows of the link and the log. */
export async function replicationStatus(
  runtime: Pick<ReplicationRuntime, 'log' | 'primaryLink' | 'secondaryLinks'>,
  physical: Physical,
  mode: ReplicationMode,
  state: ReplicationState,
): Promise<Record<string, unknown>> {
  const log = runtime.log;
  if (state.mode === 'primary') {
    return {
      mode: 'primary',
      cluster_id: state.clusterId,
      primary_cluster_addr: state.primaryClusterAddr,
      known_secondaries: state.secondaries.map((secondary) => secondary.id),
      secondaries: state.secondaries.map((secondary) => peerStatus(runtime.primaryLink.peer(mode, secondary.id))),
      ...(log ? await primaryLogStatus(log) : {}),
    };
  }
  if (state.mode === 'secondary') {
    const links = runtime.secondaryLinks;
    const connected = links.connected(mode);
    return {
      mode: 'secondary',
      cluster_id: state.clusterId,
      secondary_id: state.secondaryId,
      primary_cluster_addr: state.primary?.clusterAddr ?? '',
      known_primary_cluster_addrs: state.primary?.clusterAddrs ?? [],
      state: secondaryState(links.follower(mode), state, connected),
      primaries: state.primary
        ? [
            {
              api_address: state.primary.apiAddr,
              cluster_address: state.primary.clusterAddr,
              connection_status: connected ? 'connected' : 'disconnected',
              last_heartbeat: links.lastHeartbeat(mode)?.toISOString() ?? '',
            },
          ]
        : [],
      ...(log ? { last_remote_wal: await lastRemoteWal(physical), merkle_root: log.merkleRoot() } : {}),
    };
  }
  return { mode: 'disabled' };
}

async function primaryLogStatus(log: ReplicationLog): Promise<Record<string, unknown>> {
  const check = await log.index.lastCheck();
  return {
    last_wal: await log.lastIndex(),
    merkle_root: log.merkleRoot(),
    corrupted_merkle_tree: check?.corrupted ?? false,
    last_corruption_check_epoch: check?.epoch ?? '',
  };
}

/** `idle` without a primary; `connecting` while the link is down; else what the stream does. */
function secondaryState(follower: LogFollower | undefined, state: SecondaryState, connected: boolean): string {
  if (!state.primary) return 'idle';
  if (follower) return follower.state;
  // Not following yet (the log is opening): the link is all there is to say.
  return connected ? 'connected' : 'connecting';
}

function peerStatus(peer: PrimaryPeer | undefined): Record<string, unknown> {
  const fresh = peer !== undefined && heartbeatFresh(peer.lastHeartbeat);
  return {
    node_id: peer?.node_id ?? '',
    api_address: peer?.api_address ?? '',
    cluster_address: peer?.cluster_address ?? '',
    connection_status: fresh ? 'connected' : 'disconnected',
    last_heartbeat: peer?.lastHeartbeat.toISOString() ?? '',
  };
}
