import type { Logger } from 'pino';
import type { Bus } from '@svc/bus';
import type { ServerConfig } from '@svc/config';
import type { EngineRegistry } from '@svc/engine-host';
import type { MountInfo } from '@svc/framework';
import type { Metrics } from '@svc/metrics';
import type { Replication } from '@svc/replication';
import type { GenerateRoot } from '@svc/seal';
import type { Barrier } from '@svc/storage';
import type { Authorizer } from './access/authorizer';
import type { AuditDevices } from './audit/audit-devices';
import type { Logins } from './auth/logins';
import type { CacheCoherence } from './cluster/cache-coherence';
import type { ClusterIdentity } from './cluster/cluster-identity';
import type { ReplicaSync } from './cluster/replica-sync';
import type { StoreFollower } from './cluster/store-follower';
import type { IdentityStore } from './identity/identity-store';
import type { ExpirationManager } from './leases/expiration';
import type { LeaseLifecycle } from './leases/lease-lifecycle';
import type { MountData } from './mounts/mount-data';
import type { Namespace } from './namespaces/namespace';
import type { NamespaceRegistry } from './namespaces/registry';
import type { PeriodicFunctions } from './periodic/periodic-functions';
import type { Plugins } from './plugins/plugins';
import type { RequestHandler } from './request/request-handler';
import type { Router } from './routing/router';
import type { KeyCeremonies } from './seal/key-ceremonies';
import type { SealLifecycle } from './seal/seal-lifecycle';
import type { StorageReplacement } from './snapshots/storage-replacement';
import type { TokenLimits, TokenManager } from './tokens/token-manager';
import type { TokenStore } from './tokens/token-store';
import type { ResponseWrapper } from './wrapping/response-wrapper';

/**
 * Every part of a gateway's core, as the composition root (compose.ts) built them. A part that
 * uses others names the few it needs (`Pick<Core, ...>`), so its dependencies show at a glance.
 */
export interface Core {
  readonly config: ServerConfig;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly bus: Bus;
  readonly barrier: Barrier;
  /** Initialization, unseal and seal, keyring rotation, here and beside the peers. */
  readonly seal: SealLifecycle;
  /** Rekey and root token generation. */
  readonly ceremonies: KeyCeremonies;
  readonly namespaces: NamespaceRegistry;
  readonly router: Router;
  readonly tokens: TokenStore;
  readonly tokenManager: TokenManager;
  readonly logins: Logins;
  readonly leases: ExpirationManager;
  readonly leaseLifecycle: LeaseLifecycle;
  readonly authorizer: Authorizer;
  readonly wrapping: ResponseWrapper;
  readonly audit: AuditDevices;
  /** Performance and DR replication: state, activation, the cluster listener and heartbeats. */
  readonly replication: Replication;
  /** DR operation tokens: the root generation's mechanism, handing out a DR operation token. */
  readonly drOperationToken: GenerateRoot;
  /** Every mount type: where it runs, which table it belongs to, how its backend is built. */
  readonly engines: EngineRegistry;
  /** The plugin catalogs, and the external plugins this gateway runs for its mounts. */
  readonly plugins: Plugins;
  /** Keeps the caches of gateway replicas in step with writes made through any of them. */
  readonly replicas: ReplicaSync | StoreFollower;
  readonly coherence: CacheCoherence;
  readonly snapshots: StorageReplacement;
  readonly mountData: MountData;
  readonly clusterIdentity: ClusterIdentity;
  readonly periodic: PeriodicFunctions;
  /** The request path, given the parts each of its steps uses. */
  readonly requestHandler: RequestHandler;
  /** Deletes a namespace: its tokens and leases are revoked, its mounts and data removed. */
  deleteNamespace(namespace: Namespace): Promise<void>;
  /** The identity store of a namespace (its identity/ mount's storage). */
  identityStore(namespace: Namespace): IdentityStore;
  /** TTL defaults and maximums for a mount: its tune, else the system's. */
  tokenLimits(mount: MountInfo): TokenLimits;
  /** The API addresses this gateway serves (URLs), set once its listeners are bound. */
  apiAddresses: string[];
  start(): Promise<void>;
  stop(): Promise<void>;
}
