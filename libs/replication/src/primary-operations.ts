import { X509Certificate, randomUUID } from 'node:crypto';
import { ServiceError, type WrapInfo } from '@svc/api-contract';
import { decodePublicKey } from '@svc/seal';
import { encryptBundle, isJwtForm, signWrappingToken, verifyWrappingToken, wrappingTokenMode } from './activation';
import type { ReplicationHost } from './host';
import { FILTER_PREFIX, SHARE_VERIFIER, checkClusterAddr, modeName, type ModeStates } from './mode-state';
import { ClusterCa } from './pki';
import type { ReplicationRuntime } from './runtime';
import type { ActivationBundle, ReplicationMode } from './types';

export const DEFAULT_SECONDARY_TOKEN_TTL = 30 * 60;

type PrimaryHost = Pick<ReplicationHost, 'store' | 'logger' | 'apiAddr' | 'clusterListenAddress' | 'clusterAddr' | 'wrap' | 'shareVerifier'>;

/** A primary's operations: enabling, demoting and disabling it, and the activation and revocation of its secondaries. */
export class PrimaryOperations {
  constructor(
    private readonly host: PrimaryHost,
    private readonly states: ModeStates,
    private readonly runtime: Pick<ReplicationRuntime, 'caOf' | 'listener' | 'primaryLink'>,
  ) {}

  async enablePrimary(mode: ReplicationMode, primaryClusterAddr: string): Promise<void> {
    const state = await this.states.read(mode);
    if (state.mode !== 'disabled') throw ServiceError.badRequest(`${modeName(mode)} replication is already enabled here (${state.mode}); disable it first`);
    if (mode === 'performance' && (await this.states.read('dr')).mode === 'secondary') throw ServiceError.badRequest('a DR secondary cannot be a performance primary');
    if (primaryClusterAddr) checkClusterAddr(primaryClusterAddr, 'primary_cluster_addr');
    if (!this.host.clusterListenAddress()) throw ServiceError.badRequest('this server has no cluster listener: set cluster_address in its listener stanza');
    // Every enable is a new replication set: secondaries of an earlier one cannot rejoin it.
    const clusterId = randomUUID();
    const ca = await ClusterCa.create(clusterId);
    await this.states.save(mode, { mode: 'primary', clusterId, ca: ca.ca, primaryClusterAddr, secondaries: [] });
    this.host.logger.info({ mode, cluster_id: clusterId }, 'replication primary enabled');
  }

  /** Primary → secondary of no primary yet (update-primary gives one); the cluster id stays. */
  async demotePrimary(mode: ReplicationMode): Promise<void> {
    const state = await this.states.requirePrimary(mode);
    // Its shares were the primary's of its replication set: they authorize its DR operation tokens until a new primary hands its own.
    if (mode === 'dr') await this.host.store.putJSON(SHARE_VERIFIER, await this.host.shareVerifier());
    await this.states.save(mode, { mode: 'secondary', clusterId: state.clusterId, secondaryId: '' });
    this.host.logger.info({ mode, cluster_id: state.clusterId }, 'replication primary demoted');
  }

  async disablePrimary(mode: ReplicationMode): Promise<void> {
    await this.states.requirePrimary(mode);
    if (mode === 'performance') await this.states.deleteTree(FILTER_PREFIX);
    await this.states.save(mode, { mode: 'disabled' });
    this.host.logger.info({ mode }, 'replication primary disabled');
  }

  /**
   * An activation token for secondary `id`: a client certificate for the cluster link and the
   * addresses of this primary, response-wrapped (the wrapping token in JWT form, carrying this
   * node's API address) or, given the secondary's public key, encrypted to it.
   */
  async secondaryToken(mode: ReplicationMode, id: string, ttl: number, secondaryPublicKey: string): Promise<{ wrapInfo?: WrapInfo; token?: string }> {
    if (!/^[A-Za-z0-9_.-]{1,128}$/.test(id)) throw ServiceError.badRequest('id must be 1 to 128 letters, digits, "_", "-" or "."');
    if (ttl <= 0) throw ServiceError.badRequest('ttl must be positive');
    if (secondaryPublicKey) {
      try {
        decodePublicKey(secondaryPublicKey);
      } catch {
        throw ServiceError.badRequest('secondary_public_key is not a public key made by secondary/generate-public-key');
      }
    }
    const state = await this.states.requirePrimary(mode);
    if (state.secondaries.some((secondary) => secondary.id === id)) throw ServiceError.badRequest(`a secondary with id "${id}" already exists; revoke it first`);
    const ca = this.runtime.caOf(mode, state);
    const client = await ca.clientCertificate(id);
    const serial = new X509Certificate(client.cert).serialNumber.toLowerCase();
    const bundle: ActivationBundle = {
      mode,
      cluster_id: state.clusterId,
      secondary_id: id,
      primary_api_addr: this.host.apiAddr(),
      primary_cluster_addrs: [state.primaryClusterAddr || this.host.clusterAddr(this.runtime.listener.address)],
      ca_cert: state.ca.cert,
      client_cert: client.cert,
      client_key: client.key,
    };
    await this.states.save(mode, { ...state, secondaries: [...state.secondaries, { id, serial, activated: false }] });
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
    const state = mode && this.states.loaded(mode);
    if (!mode || state?.mode !== 'primary') return undefined;
    return verifyWrappingToken(this.runtime.caOf(mode, state), value, Math.floor(Date.now() / 1000));
  }

  async revokeSecondary(mode: ReplicationMode, id: string): Promise<void> {
    const state = await this.states.requirePrimary(mode);
    if (!state.secondaries.some((secondary) => secondary.id === id)) throw ServiceError.badRequest(`no secondary with id "${id}"`);
    await this.states.save(mode, { ...state, secondaries: state.secondaries.filter((secondary) => secondary.id !== id) });
    this.runtime.primaryLink.forget(mode, id);
    this.runtime.listener.disconnect(mode, id);
    if (mode === 'performance') await this.host.store.delete(FILTER_PREFIX + id);
    this.host.logger.info({ mode, secondary_id: id }, 'replication secondary revoked');
  }
}
