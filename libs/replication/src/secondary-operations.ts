import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import { forgetRemoteWal } from '@svc/replication-log';
import { checkShareVerifier, generateTransferKeyPair, openSealedKeyring, type SealedKeyring, type ShareVerifier } from '@svc/seal';
import type { Keyring } from '@svc/storage';
import { checkBundle, decryptBundle, isJwtForm, readWrappingClaims, wrappingTokenMode } from './activation';
import { ClusterClient } from './cluster-link';
import type { ReplicationHost, SecondaryEnableRequest, UpdatePrimaryRequest } from './host';
import { DR_TOKEN_PREFIX_KEY, PUBLIC_KEY, SHARE_VERIFIER, checkClusterAddr, modeName, type ModeStates } from './mode-state';
import { ClusterCa } from './pki';
import type { SecondaryLinks } from './secondary-link';
import { REPLICATION_MODES, type ActivationBundle, type PrimaryLink, type ReplicationMode } from './types';
import { loadCaBundle, unwrapAtPrimary } from './unwrap';

type SecondaryHost = Pick<ReplicationHost, 'store' | 'logger' | 'clusterListenAddress' | 'replaceStorage' | 'physical'>;

/** A secondary's operations: its activation by a primary's token, a change of primary, and its promotion or disabling. */
export class SecondaryOperations {
  constructor(
    private readonly host: SecondaryHost,
    private readonly states: ModeStates,
    private readonly links: Pick<SecondaryLinks, 'connected'>,
  ) {}

  /** A key pair whose public half a primary encrypts an activation token to (`secondary_public_key`). */
  async generatePublicKey(mode: ReplicationMode): Promise<string> {
    const state = await this.states.read(mode);
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
    if (!request.token) throw ServiceError.badRequest('token is required');
    const state = await this.states.read(mode);
    if (state.mode !== 'disabled') throw ServiceError.badRequest(`${modeName(mode)} replication is already enabled here (${state.mode}); disable it first`);
    const other = REPLICATION_MODES.find((candidate) => candidate !== mode)!;
    if ((await this.states.read(other)).mode === 'secondary') throw ServiceError.badRequest(`this cluster is already a ${modeName(other)} secondary`);
    if (mode === 'dr' && (await this.states.read('performance')).mode === 'primary') throw ServiceError.badRequest('a performance primary cannot become a DR secondary');
    const bundle = await this.obtainBundle(mode, request);
    const { link, keyring, shareVerifier } = await this.activate(mode, bundle);
    const kept = (await this.states.entries('')).filter(([key]) => key !== PUBLIC_KEY(mode));
    await this.host.replaceStorage(keyring, kept);
    if (shareVerifier) await this.host.store.putJSON(SHARE_VERIFIER, shareVerifier);
    // Nothing of the primary's log is applied yet: the first read resynchronizes from the primary's Merkle index.
    await forgetRemoteWal(this.host.physical);
    await this.states.save(mode, { mode: 'secondary', clusterId: bundle.cluster_id, secondaryId: bundle.secondary_id, primary: link });
    this.host.logger.warn({ mode, cluster_id: bundle.cluster_id, secondary_id: bundle.secondary_id, primary: link.apiAddr }, 'replication secondary enabled: storage wiped');
  }

  /**
   * A new primary for this secondary: by a new activation token (a blank one forgets the
   * primary), or, performance only, by the first of `update_primary_addrs` that answers with this
   * secondary's certificate. The data stays.
   */
  async updatePrimary(mode: ReplicationMode, request: UpdatePrimaryRequest): Promise<void> {
    if (request.tokenGiven && request.updatePrimaryAddrs.length > 0) throw ServiceError.badRequest('token and update_primary_addrs are mutually exclusive');
    if (!request.tokenGiven && request.updatePrimaryAddrs.length === 0) throw ServiceError.badRequest('either token or update_primary_addrs is required');
    if (mode === 'dr' && request.updatePrimaryAddrs.length > 0) throw ServiceError.badRequest('update_primary_addrs is not allowed in DR mode: use a token');
    request.updatePrimaryAddrs.forEach((addr, index) => checkClusterAddr(addr, `update_primary_addrs[${index}]`));
    const state = await this.states.requireSecondary(mode);
    if (request.tokenGiven && !request.token) {
      await this.states.save(mode, { mode: 'secondary', clusterId: state.clusterId, secondaryId: state.secondaryId });
      return;
    }
    if (request.tokenGiven) {
      const bundle = await this.obtainBundle(mode, request);
      const { link, shareVerifier } = await this.activate(mode, bundle);
      if (shareVerifier) await this.host.store.putJSON(SHARE_VERIFIER, shareVerifier);
      await this.states.save(mode, { mode: 'secondary', clusterId: bundle.cluster_id, secondaryId: bundle.secondary_id, primary: link });
      return;
    }
    if (!state.primary) throw ServiceError.badRequest('this secondary has no primary credentials: use a token');
    const client = new ClusterClient(mode, state.primary.caCert, state.primary.clientCert);
    try {
      for (const addr of request.updatePrimaryAddrs) {
        const answer = await client.call(addr, '/v1/replication/ping', {}).catch(() => undefined);
        if (answer?.cluster_id === state.clusterId) {
          await this.states.save(mode, { ...state, primary: { ...state.primary, clusterAddr: addr, clusterAddrs: request.updatePrimaryAddrs } });
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
    const state = await this.states.requireSecondary(mode);
    if (primaryClusterAddr) checkClusterAddr(primaryClusterAddr, 'primary_cluster_addr');
    if (!force && this.links.connected(mode)) {
      throw ServiceError.badRequest('the primary is still reachable: demote it first, or promote with force (two active primaries may lose data)');
    }
    if (!this.host.clusterListenAddress()) throw ServiceError.badRequest('this server has no cluster listener: set cluster_address in its listener stanza');
    const ca = await ClusterCa.create(state.clusterId);
    if (mode === 'dr') await this.states.deleteTree(DR_TOKEN_PREFIX_KEY);
    await this.states.save(mode, { mode: 'primary', clusterId: state.clusterId, ca: ca.ca, primaryClusterAddr, secondaries: [] });
    this.host.logger.warn({ mode, cluster_id: state.clusterId, force }, 'replication secondary promoted to primary');
  }

  /** A DR secondary's operation tokens are dropped with its mode, as on promotion. */
  async disableSecondary(mode: ReplicationMode): Promise<void> {
    await this.states.requireSecondary(mode);
    if (mode === 'dr') await this.states.deleteTree(DR_TOKEN_PREFIX_KEY);
    await this.states.save(mode, { mode: 'disabled' });
    this.host.logger.info({ mode }, 'replication secondary disabled');
  }

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
}
