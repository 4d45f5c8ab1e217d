import type { Envelope } from '@svc/http';

export type { Envelope };

export type QueryValue = string | number | boolean | string[];

export interface SvcClientOptions {
  /** Base URL of the service, e.g. http://127.0.0.1:8200. */
  address: string;
  token?: string;
  namespace?: string;
  /** Abort a request after this long; default 60 s. */
  timeoutMs?: number;
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, QueryValue | undefined>;
  headers?: Record<string, string>;
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
}

export interface InitRequest {
  secret_shares: number;
  secret_threshold: number;
  pgp_keys?: string[];
  root_token_pgp_key?: string;
}

export interface InitResponse {
  keys: string[];
  keys_base64: string[];
  root_token: string;
}

export type UnsealRequest = string | { reset: true };

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

export interface RekeyInitRequest {
  secret_shares: number;
  secret_threshold: number;
  pgp_keys?: string[];
  backup?: boolean;
  require_verification?: boolean;
}

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
  /** Set on the answer of the threshold-th share, with the new shares. */
  complete?: boolean;
  keys?: string[];
  keys_base64?: string[];
}

export interface RekeyVerificationStatus {
  started?: boolean;
  nonce: string;
  t?: number;
  n?: number;
  progress?: number;
  complete?: boolean;
}

export interface RekeyBackup {
  nonce: string;
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
  otp: string;
  otp_length: number;
  complete: boolean;
}
