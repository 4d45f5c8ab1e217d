import type { RekeyCompletion, RekeyStatus as RekeyProgress, VerificationStatus } from '@svc/seal';
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

/** The server's own shapes of the rekey and generate-root answers (the `sys/rekey*` and `sys/generate-root` contract). */
export type { BackupRecord as RekeyBackup, GenerateRootStatus, RekeyStart as RekeyInitRequest } from '@svc/seal';

/** Progress of a rekey, or (the threshold-th share's answer) its completion with the new shares. */
export type RekeyStatus = RekeyProgress & Partial<Pick<RekeyCompletion, 'complete' | 'keys' | 'keys_base64'>>;

/** Verification progress, or `{nonce, complete}` once it completed. */
export type RekeyVerificationStatus = Partial<VerificationStatus> & { nonce: string; complete?: boolean };
