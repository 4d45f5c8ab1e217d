import { decodeOtpToken } from '@svc/sdk';
import { startTopology, type Topology, type TopologyKind } from '@svc/local-cluster';
import { api, assertingCalls, initAndUnseal } from './http';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

/** A plain API listener on any free port, and the cluster listener on any free port too. */
export const REPLICATION_LISTENER = 'listener "tcp" {\n  address = "127.0.0.1:0"\n  cluster_address = "127.0.0.1:0"\n  tls_disable = true\n}\n';

/** One all-in-one cluster of a replication test: its topology, API address, unseal keys and root token. */
export interface ReplicationServer {
  topology: Topology;
  url: string;
  keys: string[];
  root: string;
}

/**
 * An initialized, unsealed cluster with a cluster listener: all-in-one on its own embedded storage
 * unless told otherwise, or distributed (gateways and the replication service over a PostgreSQL
 * table of their own, NATS and Redis).
 */
export async function startReplicationServer(options: Parameters<typeof startTopology>[1] = {}, kind: TopologyKind = 'all-in-one'): Promise<ReplicationServer> {
  const services = kind === 'distributed' ? ['replication', ...(options.services ?? [])] : options.services;
  const topology = await startTopology(kind, { listeners: [REPLICATION_LISTENER], ...options, services });
  const { rootToken, keys } = await initAndUnseal(topology.urls[0]);
  return { topology, url: topology.urls[0], keys, root: rootToken };
}

/** Activates `secondary` as `primary`'s secondary of `mode` under `id`, with a wrapped activation token. */
export async function activateSecondary(primary: Pick<ReplicationServer, 'url' | 'root'>, mode: 'performance' | 'dr', secondary: Pick<ReplicationServer, 'url' | 'root'>, id: string): Promise<void> {
  const made = await api<Body>(primary.url, 'PUT', `/v1/sys/replication/${mode}/primary/secondary-token`, { token: primary.root, body: { id } });
  if (made.status !== 200) throw new Error(`secondary-token answered ${made.status}: ${made.text}`);
  const res = await api(secondary.url, 'PUT', `/v1/sys/replication/${mode}/secondary/enable`, { token: secondary.root, body: { token: made.body.wrap_info.token } });
  if (res.status !== 204) throw new Error(`secondary enable answered ${res.status}: ${res.text}`);
}

/** Calls to one server, with its root token unless another is given (the server is read at call time). */
export function replicationCalls(server: () => Pick<ReplicationServer, 'url' | 'root'>) {
  const call = (method: string, where: string, body?: unknown, token: string = server().root) => api<Body>(server().url, method, `/v1/${where}`, { body, token });
  return { call, ...assertingCalls(call) };
}

/** A replication status, read without a token. */
export async function replicationStatus(server: Pick<ReplicationServer, 'url'>, mode: 'performance' | 'dr'): Promise<Body> {
  const res = await api<Body>(server.url, 'GET', `/v1/sys/replication/${mode}/status`);
  if (res.status !== 200) throw new Error(`replication status answered ${res.status}`);
  return res.body.data;
}

/** The OTP flow of `base` (generate-root, or a DR operation token's) with the given shares: the token, decoded; usable outside Jest (benchmarks). */
async function generateWithShares(server: Pick<ReplicationServer, 'url'>, base: string, keys: readonly string[]): Promise<string> {
  const put = async (where: string, body: unknown): Promise<Body> => {
    const res = await api<Body>(server.url, 'PUT', `/v1/${where}`, { body });
    if (res.status !== 200) throw new Error(`${where} answered ${res.status}: ${res.text}`);
    return res.body;
  };
  const attempt = await put(`${base}/attempt`, {});
  let done: Body = {};
  for (const key of keys) {
    done = await put(`${base}/update`, { key, nonce: attempt.nonce });
    if (done.complete) break;
  }
  return decodeOtpToken(done.encoded_token, attempt.otp);
}

/** A root token made through generate-root (OTP) with the given unseal keys (the server's own by default). */
export function generateRootWithKeys(server: Pick<ReplicationServer, 'url' | 'keys'>, keys: readonly string[] = server.keys): Promise<string> {
  return generateWithShares(server, 'sys/generate-root', keys);
}

/** A DR operation token made on a DR secondary (OTP) with its primary's unseal keys. */
export function drOperationToken(secondary: Pick<ReplicationServer, 'url'>, primaryKeys: readonly string[]): Promise<string> {
  return generateWithShares(secondary, 'sys/replication/dr/secondary/generate-operation-token', primaryKeys);
}

/** Unseals a server (after a restart) with its own keys. */
export async function unsealReplicationServer(server: ReplicationServer): Promise<void> {
  for (const key of server.keys) {
    const res = await api(server.url, 'PUT', '/v1/sys/unseal', { body: { key } });
    if (res.status !== 200) throw new Error(`unseal failed: ${res.status} ${res.text}`);
    if ((res.body as Body).sealed === false) return;
  }
}
