/** What the jwt/oidc auth method keeps in its mount's storage (encrypted by the barrier). */
import type { TokenSettings } from '@svc/framework';
import { RecordStore } from '@svc/storage';

/** `config`: where signing keys come from, and the OIDC client. */
export interface JwtConfig {
  oidc_discovery_url: string;
  oidc_discovery_ca_pem: string;
  oidc_client_id: string;
  /** Never shown by a read. */
  oidc_client_secret: string;
  oidc_response_mode: ResponseMode;
  oidc_response_types: string[];
  jwks_url: string;
  jwks_ca_pem: string;
  jwt_validation_pubkeys: string[];
  jwt_supported_algs: string[];
  bound_issuer: string;
  default_role: string;
  /** Kept as given: no provider-specific handling reads it. */
  provider_config: Record<string, unknown>;
  namespace_in_state: boolean;
}

export const RESPONSE_MODES = ['query', 'form_post'] as const;
export type ResponseMode = (typeof RESPONSE_MODES)[number];

/** The asymmetric signature algorithms a token may be signed with (never `none` or a shared secret). */
export const SIGNING_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;

export const ROLE_TYPES = ['oidc', 'jwt'] as const;
export const BOUND_CLAIMS_TYPES = ['string', 'glob'] as const;

/** A login role: which tokens it accepts, what it records of them, and the tokens it issues. */
export interface JwtRole extends TokenSettings {
  role_type: (typeof ROLE_TYPES)[number];
  bound_audiences: string[];
  user_claim: string;
  user_claim_json_pointer: boolean;
  bound_subject: string;
  /** Claim (name or JSON pointer) → the value, or any of the values, it must have. */
  bound_claims: Record<string, string | string[]>;
  bound_claims_type: (typeof BOUND_CLAIMS_TYPES)[number];
  /** Claim (name or JSON pointer) → metadata key. */
  claim_mappings: Record<string, string>;
  groups_claim: string;
  oidc_scopes: string[];
  allowed_redirect_uris: string[];
  verbose_oidc_logging: boolean;
  /** Seconds; 0 stands for the default. */
  clock_skew_leeway: number;
  expiration_leeway: number;
  not_before_leeway: number;
  /** Seconds since the user last authenticated at the provider an OIDC login accepts; 0: any. */
  max_age: number;
}

/** An OIDC login between auth_url and its callback, under the hash of its state. */
export interface OidcFlow {
  role: string;
  /** The redirect_uri sent to the provider (without a namespace moved into the state). */
  redirect_uri: string;
  nonce: string;
  code_verifier: string;
  /** The client's own nonce, which its callback must repeat; '' for none. */
  client_nonce: string;
  /** Milliseconds since the epoch. */
  expires_at: number;
}

export const CONFIG_KEY = 'config';
export const ROLES = new RecordStore<JwtRole>('role/');
export const OIDC_FLOWS = new RecordStore<OidcFlow>('oidc-state/');
