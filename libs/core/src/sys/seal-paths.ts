import type { Bus } from '@svc/bus';
import type { ServerConfig } from '@svc/config';
import type { PathDeclaration, Response } from '@svc/framework';
import { ServiceError, VERSION } from '@svc/api-contract';
import type { Replication } from '@svc/replication';
import type { Seal } from '@svc/seal';
import type { Keyring } from '@svc/storage';
import type { ClusterIdentity } from '../cluster/cluster-identity';
import type { ReplicaSync } from '../cluster/replica-sync';
import type { StoreFollower } from '../cluster/store-follower';
import type { ExpirationManager } from '../leases/expiration';
import type { SealLifecycle } from '../seal/seal-lifecycle';

/** What the seal paths use of each part of the core. */
export interface SealPathsDeps {
  seal: Pick<SealLifecycle, 'state' | 'activeSince' | 'initialize' | 'submitUnsealKey' | 'sealNow' | 'rotateKeyring'> & {
    /** The seal's own status, and its kind (init's stored_shares depends on it). */
    readonly seal: Pick<Seal, 'status' | 'recoverySeal'>;
  };
  /** The barrier's key terms, for sys/key-status. */
  barrier: { readonly keyring: Pick<Keyring, 'active'> };
  replication: Pick<Replication, 'modes' | 'isDrSecondary'>;
  /** Out of contact with the other replicas, an unsealed gateway is unhealthy. */
  replicas: Pick<ReplicaSync | StoreFollower, 'inContact'>;
  clusterIdentity: Pick<ClusterIdentity, 'name' | 'id'>;
  /** A NATS bus is what makes a gateway highly available (sys/leader). */
  bus: Pick<Bus, 'kind'>;
  config: Pick<ServerConfig, 'apiAddr' | 'clusterAddr'>;
  leases: Pick<ExpirationManager, 'stepDown'>;
}

/** sys/init, sys/unseal, sys/seal-status, sys/seal, sys/health, sys/leader, sys/step-down, sys/key-status, sys/rotate. */
export function sealPaths(core: SealPathsDeps): PathDeclaration[] {
  const replicationModes = () => {
    const modes = core.replication.modes();
    return { replication_performance_mode: modes.performance, replication_dr_mode: modes.dr };
  };
  const sealStatus = async (): Promise<Response> => ({
    // A replica may hold the keyring through a peer's unseal, so the barrier is the authority.
    raw: { ...(await core.seal.seal.status()), sealed: core.seal.state !== 'unsealed', ...replicationModes() },
  });

  return [
    {
      pattern: 'init',
      synopsis: 'Initializes a new service: creates the unseal key shares and the root token.',
      description: 'Only possible once. With `pgp_keys`, each share is returned encrypted to the matching PGP key.',
      fields: {
        secret_shares: { type: 'int', description: 'Shamir seal (required there): number of key shares to split the unseal key into.' },
        secret_threshold: { type: 'int', description: 'Shamir seal (required there): number of shares required to unseal.' },
        pgp_keys: { type: 'comma-string-list', description: 'Base64 PGP public keys, one per share, to encrypt the shares with.' },
        recovery_shares: { type: 'int', description: 'Auto-unseal seal (required there): number of recovery key shares.' },
        recovery_threshold: { type: 'int', description: 'Auto-unseal seal (required there): number of recovery shares that authorize an operation.' },
        recovery_pgp_keys: { type: 'comma-string-list', description: 'Base64 PGP public keys, one per recovery share, to encrypt the recovery shares with.' },
        root_token_pgp_key: { type: 'string', description: 'Base64 PGP public key to encrypt the root token with.' },
        stored_shares: { type: 'int', description: 'The Shamir seal stores no shares (0 or absent); an auto-unseal seal stores the root key itself (1 or absent).' },
      },
      operations: {
        read: { summary: 'Whether the service is initialized.', unauthenticated: true, handler: async () => ({ raw: { initialized: core.seal.state !== 'uninitialized' } }) },
        update: {
          summary: 'Initialize the service.',
          unauthenticated: true,
          handler: async (_req, f) => {
            const storedShares = f.get<number>('stored_shares');
            if (!core.seal.seal.recoverySeal && (storedShares ?? 0) > 0) throw ServiceError.badRequest('stored_shares is not supported by the shamir seal');
            if (core.seal.seal.recoverySeal && storedShares !== undefined && storedShares !== 1) throw ServiceError.badRequest('stored_shares must be 1 with an auto-unseal seal');
            const result = await core.seal.initialize({
              secret_shares: f.get('secret_shares'),
              secret_threshold: f.get('secret_threshold'),
              pgp_keys: f.has('pgp_keys') ? f.get('pgp_keys') : undefined,
              recovery_shares: f.get('recovery_shares'),
              recovery_threshold: f.get('recovery_threshold'),
              recovery_pgp_keys: f.has('recovery_pgp_keys') ? f.get('recovery_pgp_keys') : undefined,
              root_token_pgp_key: f.get<string>('root_token_pgp_key') || undefined,
            });
            return { raw: result };
          },
        },
      },
    },
    {
      pattern: 'unseal',
      synopsis: 'Submits one unseal key share; the threshold-th share unseals the service.',
      fields: {
        key: { type: 'string', sensitive: true, description: 'One unseal key share (hex or base64).' },
        reset: { type: 'bool', default: false, description: 'Discard the shares submitted so far.' },
        migrate: { type: 'bool', default: false, description: 'Set on every call during a seal migration: the key is a share of the old seal (an unseal share from Shamir, a recovery share from an auto-unseal seal).' },
      },
      operations: {
        update: {
          summary: 'Submit an unseal key share.',
          unauthenticated: true,
          handler: async (_req, f) => {
            const reset = f.get<boolean>('reset');
            if (!reset && !f.get<string>('key')) throw ServiceError.badRequest('missing required field "key"');
            await core.seal.submitUnsealKey(f.get('key'), reset, f.get<boolean>('migrate'));
            return sealStatus();
          },
        },
      },
    },
    {
      pattern: 'seal-status',
      synopsis: 'Seal state, threshold and unseal progress.',
      operations: { read: { summary: 'Read the seal status.', unauthenticated: true, handler: sealStatus } },
    },
    {
      pattern: 'seal',
      synopsis: 'Seals the service: key material is dropped from memory in every process.',
      operations: {
        update: {
          summary: 'Seal the service.',
          sudo: true,
          rootNamespace: true,
          handler: async () => {
            await core.seal.sealNow();
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'health',
      synopsis: 'Health of this node, with the status code chosen by its state.',
      description: 'Query parameters override the status codes returned in each state. An unsealed gateway that has lost contact with the cluster answers 503.',
      fields: {
        standbyok: { type: 'bool', default: false, description: 'Return the active code for a standby node.' },
        perfstandbyok: { type: 'bool', default: false, description: 'Return the active code for a performance standby.' },
        activecode: { type: 'int', default: 200, description: 'Status code when active.' },
        standbycode: { type: 'int', default: 429, description: 'Status code when standby.' },
        drsecondarycode: { type: 'int', default: 472, description: 'Status code for a disaster-recovery secondary.' },
        performancestandbycode: { type: 'int', default: 473, description: 'Status code for a performance standby.' },
        sealedcode: { type: 'int', default: 503, description: 'Status code when sealed.' },
        uninitcode: { type: 'int', default: 501, description: 'Status code when not initialized.' },
      },
      operations: {
        read: {
          summary: 'Health of this node.',
          unauthenticated: true,
          handler: async (_req, f) => {
            const state = core.seal.state;
            // Out of contact with its peers, an unsealed gateway answers everything else with 503.
            const status =
              state === 'uninitialized'
                ? f.get<number>('uninitcode')
                : state === 'sealed'
                  ? f.get<number>('sealedcode')
                  : !core.replicas.inContact
                    ? 503
                    : core.replication.isDrSecondary
                      ? f.get<number>('drsecondarycode')
                      : f.get<number>('activecode');
            if (status < 100 || status > 599) throw ServiceError.badRequest(`invalid status code ${status}`);
            return {
              status,
              raw: {
                initialized: state !== 'uninitialized',
                sealed: state !== 'unsealed',
                standby: false,
                performance_standby: false,
                ...replicationModes(),
                server_time_utc: Math.floor(Date.now() / 1000),
                version: VERSION,
                cluster_name: core.clusterIdentity.name,
                cluster_id: core.clusterIdentity.id,
              },
            };
          },
        },
      },
    },
    {
      pattern: 'leader',
      synopsis: 'High-availability status of this node.',
      operations: {
        read: {
          summary: 'Read the leader status.',
          unauthenticated: true,
          handler: async () => ({
            raw: {
              ha_enabled: core.bus.kind === 'nats',
              is_self: true,
              active_time: core.seal.activeSince?.toISOString() ?? '0001-01-01T00:00:00Z',
              leader_address: core.config.apiAddr ?? '',
              leader_cluster_address: core.config.clusterAddr ?? '',
              performance_standby: false,
              performance_standby_last_remote_wal: 0,
            },
          }),
        },
      },
    },
    {
      pattern: 'step-down',
      synopsis: "Hands this node's active duty (running lease expiry) to another node.",
      operations: {
        update: {
          summary: 'Step down from active duty.',
          sudo: true,
          rootNamespace: true,
          handler: async () => {
            await core.leases.stepDown();
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'key-status',
      dataAtTopLevel: true,
      synopsis: 'The active encryption key term of the barrier.',
      operations: {
        read: {
          summary: 'Read the key status.',
          handler: async () => {
            const active = core.barrier.keyring.active();
            return { data: { term: active.term, install_time: active.installedAt } };
          },
        },
      },
    },
    {
      pattern: 'rotate',
      synopsis: 'Adds a new encryption key term; new writes use it, older data stays readable.',
      operations: {
        update: {
          summary: 'Rotate the barrier key.',
          sudo: true,
          rootNamespace: true,
          handler: async () => {
            await core.seal.rotateKeyring();
            return undefined;
          },
        },
      },
    },
  ];
}
