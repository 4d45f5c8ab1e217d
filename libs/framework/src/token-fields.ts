import { ServiceError } from '@svc/api-contract';
import { validateCidrs } from './cidrs';
import type { AuthResponse, FieldData, FieldMap } from './types';

export type TokenType = NonNullable<AuthResponse['tokenType']>;

/** The token settings every auth method's roles and users carry (Vault's tokenutil fields). */
export interface TokenSettings {
  token_policies: string[];
  token_ttl: number;
  token_max_ttl: number;
  token_explicit_max_ttl: number;
  token_period: number;
  token_num_uses: number;
  token_no_default_policy: boolean;
  token_bound_cidrs: string[];
  token_type: TokenType;
}

export const DEFAULT_TOKEN_SETTINGS: Readonly<TokenSettings> = Object.freeze({
  token_policies: [],
  token_ttl: 0,
  token_max_ttl: 0,
  token_explicit_max_ttl: 0,
  token_period: 0,
  token_num_uses: 0,
  token_no_default_policy: false,
  token_bound_cidrs: [],
  token_type: 'default',
});

/** The token fields of a role or user; `policies` and `period` are the legacy names Vault still accepts. */
export const TOKEN_FIELDS: FieldMap = {
  token_policies: { type: 'comma-string-list', description: 'Policies of the tokens issued.' },
  policies: { type: 'comma-string-list', deprecated: true, description: 'Legacy name of token_policies.' },
  token_ttl: { type: 'duration', description: 'Initial TTL of the tokens issued; 0: the mount default.' },
  token_max_ttl: { type: 'duration', description: 'Maximum TTL of the tokens issued, renewals included; 0: the mount maximum.' },
  token_explicit_max_ttl: { type: 'duration', description: 'Hard limit of the tokens issued, beyond the mount maximum.' },
  token_period: { type: 'duration', description: 'Tokens issued are periodic: every renewal resets their TTL to this.' },
  period: { type: 'duration', deprecated: true, description: 'Legacy name of token_period.' },
  token_num_uses: { type: 'int', description: 'Uses of the tokens issued; 0: unlimited.' },
  token_no_default_policy: { type: 'bool', description: 'Do not add the default policy to the tokens issued.' },
  token_bound_cidrs: { type: 'comma-string-list', description: 'CIDR blocks the tokens issued may be used from.' },
  token_type: {
    type: 'string',
    allowed: ['service', 'batch', 'default', 'default-service', 'default-batch'],
    description: 'Type of the tokens issued.',
  },
};

/** The legacy field names, each beside the current one it stands for. */
const LEGACY_NAMES: Partial<Record<keyof TokenSettings, string>> = { token_policies: 'policies', token_period: 'period' };

/**
 * The settings a write gives: each field sent (or its legacy name) replaces the existing value,
 * the others stay (or take their default on create). Checked as Vault checks them.
 */
export function readTokenSettings(f: FieldData, existing: TokenSettings = DEFAULT_TOKEN_SETTINGS): TokenSettings {
  // Only the token fields are taken from `existing`, which may be a whole role or user.
  const settings: Record<string, unknown> = {};
  for (const name of Object.keys(DEFAULT_TOKEN_SETTINGS) as (keyof TokenSettings)[]) {
    const legacy = LEGACY_NAMES[name];
    const sentAs = f.sentDeclared(name) ? name : legacy && f.sentDeclared(legacy) ? legacy : undefined;
    settings[name] = sentAs ? f.get(sentAs) : existing[name];
  }
  return checkedTokenSettings(settings as unknown as TokenSettings);
}

function checkedTokenSettings(settings: TokenSettings): TokenSettings {
  settings.token_policies = settings.token_policies.map((policy) => policy.trim().toLowerCase()).filter(Boolean);
  settings.token_bound_cidrs = validateCidrs('token_bound_cidrs', settings.token_bound_cidrs);
  if (settings.token_num_uses < 0) throw ServiceError.badRequest('field "token_num_uses" cannot be negative');
  if (settings.token_max_ttl > 0 && settings.token_ttl > settings.token_max_ttl) {
    throw ServiceError.badRequest('field "token_ttl" cannot be greater than token_max_ttl');
  }
  if (isBatch(settings.token_type) && (settings.token_period > 0 || settings.token_num_uses > 0)) {
    throw ServiceError.badRequest('field "token_type": batch tokens cannot be periodic or limited-use');
  }
  return settings;
}

/** The settings as a read shows them, legacy names included (they mirror the current ones). */
export function tokenSettingsData<T extends TokenSettings>(settings: T): T & { policies: string[]; period: number } {
  return { ...settings, policies: settings.token_policies, period: settings.token_period };
}

/** The `auth` of a login under these settings; the caller adds who logged in. */
export function tokenAuth(
  settings: TokenSettings,
  login: Pick<AuthResponse, 'displayName' | 'metadata' | 'alias' | 'internalData' | 'groupAliases'> & { boundCidrs?: string[] },
): AuthResponse {
  return {
    policies: settings.token_policies,
    noDefaultPolicy: settings.token_no_default_policy,
    ttl: settings.token_ttl,
    maxTtl: settings.token_max_ttl,
    explicitMaxTtl: settings.token_explicit_max_ttl,
    period: settings.token_period,
    numUses: settings.token_num_uses,
    tokenType: settings.token_type,
    renewable: true,
    ...login,
    boundCidrs: login.boundCidrs?.length ? login.boundCidrs : settings.token_bound_cidrs,
  };
}

/** A renewal's auth: what the login had, with the TTLs and policies the settings now hold. */
export function renewedAuth(settings: TokenSettings, auth: AuthResponse): AuthResponse {
  return {
    ...auth,
    policies: settings.token_policies,
    noDefaultPolicy: settings.token_no_default_policy,
    ttl: settings.token_ttl,
    maxTtl: settings.token_max_ttl,
    period: settings.token_period,
  };
}

function isBatch(type: TokenType): boolean {
  return type === 'batch' || type === 'default-batch';
}
