/** What the API answers (the envelope of Document 1): a secret, a token (`auth`) or a wrapping token. */
export interface Envelope {
  request_id: string;
  lease_id: string;
  renewable: boolean;
  lease_duration: number;
  data: Record<string, unknown> | null;
  wrap_info: WrapInfo | null;
  warnings: string[] | null;
  auth: AuthBlock | null;
  mount_type?: string;
}

export interface WrapInfo {
  token: string;
  accessor: string;
  ttl: number;
  creation_time: string;
  creation_path: string;
  wrapped_accessor?: string;
}

/** The token a login or token creation hands out, and what it grants. */
export interface AuthBlock {
  client_token: string;
  accessor: string;
  policies: string[];
  token_policies: string[];
  identity_policies?: string[];
  metadata: Record<string, string> | null;
  lease_duration: number;
  renewable: boolean;
  entity_id: string;
  token_type: string;
  orphan: boolean;
  num_uses: number;
  mfa_requirement: null;
}

/** A token as auth/token/lookup-self and lookup describe it (never its id unless the caller gave it). */
export interface TokenInfo {
  accessor: string;
  creation_time: number;
  creation_ttl: number;
  display_name: string;
  entity_id: string;
  expire_time: string | null;
  explicit_max_ttl: number;
  /** The token itself, for lookup-self and lookup by token; '' for lookups by accessor. */
  id: string;
  /** The entity's and its groups' policies, when it has an entity with any. */
  identity_policies?: string[];
  issue_time: string;
  meta: Record<string, string> | null;
  num_uses: number;
  orphan: boolean;
  path: string;
  policies: string[];
  renewable: boolean;
  /** Seconds left; 0 for a token that never expires. */
  ttl: number;
  type: 'service' | 'batch';
  period?: number;
  /** The token role it was created with. */
  role?: string;
  namespace_path: string;
  bound_cidrs?: string[];
}

export type QueryValue = string | number | boolean | string[];

export interface SvcClientOptions {
  /** Base URL of the service, e.g. http://127.0.0.1:8200. */
  address: string;
  token?: string;
  namespace?: string;
  /** Abort a request after this long; default 60 s. */
  timeoutMs?: number;
  /**
   * Retries of a request answered 5xx (except 501) or 412, or not answered at all: default 2, with
   * a backoff of 1 to 1.5 s growing with each attempt (as Vault's client).
   */
  maxRetries?: number;
  /** Backoff before the first retry, in ms (default 1000); later retries wait longer. */
  retryWaitMs?: number;
  /** Wrap every answer in a single-use token of this TTL (`X-Service-Wrap-TTL`, e.g. "5m"). */
  wrapTtl?: string;
  tls?: TlsOptions;
}

/** TLS settings for an https address (PEM text). */
export interface TlsOptions {
  /** CA certificates to trust instead of the system's. */
  ca?: string | string[];
  /** Client certificate and key, for a listener that asks for one. */
  cert?: string;
  key?: string;
  /** Name expected in the server's certificate (default: the address's host). */
  serverName?: string;
  /** Accept any server certificate: for tests only. */
  insecureSkipVerify?: boolean;
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, QueryValue | undefined>;
  headers?: Record<string, string>;
  /** Send the answer to this request only through a wrapping token of this TTL. */
  wrapTtl?: string;
}

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Record<string, string>;
  /** Parsed JSON, or null for an empty body (204). */
  body: T | null;
}

export interface SealStatus {
  type: string;
  initialized: boolean;
  sealed: boolean;
  /** Threshold of unseal keys. */
  t: number;
  /** Number of unseal keys. */
  n: number;
  progress: number;
  nonce: string;
  version: string;
  build_date?: string;
  migration?: boolean;
  cluster_name?: string;
  cluster_id?: string;
  recovery_seal?: boolean;
  storage_type?: string;
  /** `disabled`, `primary` or `secondary`; `unknown` while sealed (the state is kept in the barrier). */
  replication_performance_mode?: string;
  replication_dr_mode?: string;
}

/** Unseal key settings for a Shamir seal, or recovery key settings for an auto-unseal seal. */
export interface InitRequest {
  secret_shares?: number;
  secret_threshold?: number;
  pgp_keys?: string[];
  recovery_shares?: number;
  recovery_threshold?: number;
  recovery_pgp_keys?: string[];
  root_token_pgp_key?: string;
}

export interface InitResponse {
  keys: string[];
  keys_base64: string[];
  /** Auto-unseal seals: the recovery keys (no unseal keys). */
  recovery_keys?: string[];
  recovery_keys_base64?: string[];
  root_token: string;
}

/** A share, `{ reset: true }`, or a share with `migrate` (set on every share during a seal migration). */
export type UnsealRequest = string | { reset: true } | { key: string; migrate?: boolean };

export interface HealthStatus {
  initialized: boolean;
  sealed: boolean;
  standby: boolean;
  performance_standby?: boolean;
  replication_performance_mode?: string;
  replication_dr_mode?: string;
  server_time_utc?: number;
  version?: string;
  cluster_name?: string;
  cluster_id?: string;
}

export interface MountConfig {
  default_lease_ttl?: number | string;
  max_lease_ttl?: number | string;
  force_no_cache?: boolean;
  [setting: string]: unknown;
}

export interface MountInfo {
  type: string;
  description: string;
  accessor: string;
  uuid?: string;
  config: MountConfig;
  options: Record<string, string> | null;
  local: boolean;
  seal_wrap: boolean;
}

export interface EnableMountInput {
  type: string;
  description?: string;
  config?: MountConfig;
  options?: Record<string, string>;
}

/** Which keys a rekey replaces: the unseal keys (`sys/rekey`) or the recovery keys (`sys/rekey-recovery-key`). */
export type RekeyTarget = 'barrier' | 'recovery';

/** What a generate-root flow makes: a root token, or (on a DR secondary, with its primary's shares) a DR operation token. */
export type GeneratedToken = 'root' | 'dr-operation';

export interface RekeyInitRequest {
  /** Required unless the seal stores the new key (an auto-unseal seal's rekey rotates the root key). */
  secret_shares?: number;
  secret_threshold?: number;
  pgp_keys?: string[];
  backup?: boolean;
  require_verification?: boolean;
}

/** Progress of a rekey, or (the threshold-th share's answer) its completion with the new shares. */
export interface RekeyStatus {
  started: boolean;
  nonce: string;
  t: number;
  n: number;
  progress: number;
  required: number;
  pgp_fingerprints: string[] | null;
  backup: boolean;
  verification_required: boolean;
  verification_nonce?: string;
  complete?: boolean;
  keys?: string[];
  keys_base64?: string[];
}

/** Verification progress, or `{nonce, complete}` once it completed. */
export interface RekeyVerificationStatus {
  nonce: string;
  started?: boolean;
  t?: number;
  n?: number;
  progress?: number;
  complete?: boolean;
}

export interface RekeyBackup {
  nonce: string;
  /** PGP fingerprint -> the shares encrypted to that key (hex), in share order. */
  keys: Record<string, string[]>;
}

export interface GenerateRootStatus {
  started: boolean;
  nonce: string;
  progress: number;
  required: number;
  encoded_token: string;
  encoded_root_token: string;
  pgp_fingerprint: string;
  /** Only in the answer that starts an attempt without a PGP key. */
  otp: string;
  otp_length: number;
  complete: boolean;
}

/** The calls the SDK's areas (kv, transit, logins, sys, ...) make through their client; `SvcClient` is one. */
export interface ClientCalls {
  withToken(token: string | undefined): ClientCalls;
  withOptions(options: Partial<SvcClientOptions>): ClientCalls;
  request<T = unknown>(method: string, path: string, opts?: RequestOptions): Promise<ApiResponse<T>>;
  send<T = unknown>(method: string, path: string, opts?: RequestOptions): Promise<ApiResponse<T>>;
  read(path: string, query?: RequestOptions['query']): Promise<Envelope | null>;
  write(path: string, data?: Record<string, unknown>): Promise<Envelope | null>;
  patch(path: string, data: Record<string, unknown>): Promise<Envelope | null>;
  list(path: string): Promise<Envelope | null>;
  delete(path: string): Promise<Envelope | null>;
}
