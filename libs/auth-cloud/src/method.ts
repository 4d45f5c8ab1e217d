/** The state one cloud auth mount keeps in one service replica, shared by its path handlers. */
import { ProviderClientCache, type ProviderClients } from '@svc/cloud-provider';
import type { EngineContext } from '@svc/engine-host';
import type { MountInfo } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';
import { CLIENT_CONFIG, DEFAULT_ENTRY_TTL, DEFAULT_IDENTITY, IDENTITY_CONFIG, ROLES, type ClientConfig, type IdentityConfig, type RoleRecord } from './records';

export class CloudAuth {
  private readonly clientCache = new ProviderClientCache();

  readonly storage: StorageView;

  constructor(
    readonly mount: MountInfo,
    readonly context: EngineContext,
  ) {
    this.storage = context.storage;
  }

  clientConfig(): Promise<ClientConfig | null> {
    return CLIENT_CONFIG.get(this.storage, 'client');
  }

  async identityConfig(): Promise<IdentityConfig> {
    return (await IDENTITY_CONFIG.get(this.storage, 'identity')) ?? DEFAULT_IDENTITY;
  }

  /** IAM and STS clients of the configured credentials; STS in `sts_region`. */
  async clients(config?: ClientConfig | null): Promise<ProviderClients> {
    const client = config === undefined ? await this.clientConfig() : config;
    return this.clientCache.get(client && { ...client, region: client.sts_region });
  }

  role(name: string): Promise<RoleRecord | null> {
    return ROLES.get(this.storage, name.toLowerCase());
  }

  async requireRole(name: string): Promise<RoleRecord> {
    const role = await this.role(name);
    if (!role) throw ServiceError.badRequest(`entry for role "${name}" not found`);
    return role;
  }

  /** How long a login's access-list entry, or a deny-list entry, lasts: the longest TTL that bounds its tokens. */
  entryTtl(...ttls: number[]): number {
    return Math.max(...ttls, this.mount.config.max_lease_ttl) || DEFAULT_ENTRY_TTL;
  }

  close(): void {
    this.clientCache.close();
  }
}
