/** The state one jwt/oidc auth mount keeps in one process, shared by its path handlers. */
import { addressAllowed, type Request } from '@svc/framework';
import type { EngineContext } from '@svc/engine-host';
import { ServiceError } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';
import { failureReason } from './provider-fetch';
import { ProviderCache, ProviderFailure, type IdentityProvider, type OutboundSettings } from './providers';
import { CONFIG_KEY, ROLES, type JwtConfig, type JwtRole } from './records';

export interface JwtAuthOptions {
  /** The deadline of each call to the identity provider (discovery, JWKS, token endpoint); default 10 s. */
  providerDeadlineMs?: number;
  /**
   * The least time between two JWKS fetches prompted by tokens signed with a key it lacks; default 0:
   * a key the provider has just rotated in works at once (concurrent fetches are shared).
   */
  jwksCooldownMs?: number;
  /** How long an OIDC login may take from auth_url to its callback; default 10 minutes. */
  oidcFlowTtlMs?: number;
}

export interface JwtAuthSettings extends OutboundSettings {
  oidcFlowTtlMs: number;
}

export function jwtAuthSettings(options: JwtAuthOptions = {}): JwtAuthSettings {
  return {
    deadlineMs: options.providerDeadlineMs ?? 10_000,
    jwksCooldownMs: options.jwksCooldownMs ?? 0,
    oidcFlowTtlMs: options.oidcFlowTtlMs ?? 10 * 60_000,
  };
}

export class JwtAuth {
  readonly storage: StorageView;
  readonly providers: ProviderCache;

  constructor(
    readonly context: EngineContext,
    readonly settings: JwtAuthSettings,
  ) {
    this.storage = context.storage;
    this.providers = new ProviderCache(settings);
  }

  config(): Promise<JwtConfig | null> {
    return this.storage.getJSON<JwtConfig>(CONFIG_KEY);
  }

  async requireConfig(): Promise<JwtConfig> {
    const config = await this.config();
    if (!config) throw ServiceError.badRequest('the method is not configured: write its config first');
    return config;
  }

  role(name: string): Promise<JwtRole | null> {
    return ROLES.get(this.storage, name.toLowerCase());
  }

  /** The role a login names, or the configured default_role. */
  async loginRole(config: JwtConfig, requested: string): Promise<{ name: string; role: JwtRole }> {
    const name = (requested || config.default_role).toLowerCase();
    if (!name) throw ServiceError.badRequest('missing role: name one, or set a default_role');
    const role = await this.role(name);
    if (!role) throw ServiceError.badRequest(`role "${name}" could not be found`);
    return { name, role };
  }

  /** The provider of `config`; 502 when it cannot be reached (the configuration was good when written). */
  async provider(config: JwtConfig): Promise<IdentityProvider> {
    try {
      return await this.providers.get(config);
    } catch (err) {
      if (err instanceof ProviderFailure) throw ServiceError.badGateway(`${err.message}: ${failureReason(err.cause)}`);
      throw err;
    }
  }
}

/** Refuses a login from outside the role's token_bound_cidrs. */
export function checkSourceAddress(role: JwtRole, req: Request): void {
  if (!addressAllowed(role.token_bound_cidrs, req.remoteAddress)) {
    throw ServiceError.forbidden(`permission denied: source address "${req.remoteAddress ?? ''}" is not allowed by the role's token_bound_cidrs`);
  }
}
