/** What the engine keeps in its mount's storage (encrypted by the barrier), one JSON record per name. */
import type { ProviderConfig } from '@svc/cloud-provider';
import { RecordStore } from '@svc/storage';

export interface RootConfig extends ProviderConfig {
  username_template: string;
}

/** Seconds; 0 for the mount's defaults. */
export interface LeaseConfig {
  lease: number;
  lease_max: number;
}

export const CREDENTIAL_TYPES = ['iam_user', 'assumed_role', 'federation_token'] as const;
export type CredentialType = (typeof CREDENTIAL_TYPES)[number];

export interface RoleRecord {
  credential_types: CredentialType[];
  role_arns: string[];
  policy_arns: string[];
  /** Compacted JSON, or ''. */
  policy_document: string;
  iam_groups: string[];
  iam_tags: Record<string, string>;
  default_sts_ttl: number;
  max_sts_ttl: number;
  user_path: string;
  permissions_boundary_arn: string;
  /** Written with the legacy `policy`/`arn`: `creds/` serves only iam_user and `sts/` only the STS types. */
  legacy: boolean;
}

export interface StaticRoleRecord {
  username: string;
  /** The user's id when the role was written: a user deleted and recreated under the same name is another user. */
  user_id: string;
  rotation_period: number;
  access_key: string;
  secret_key: string;
  /** ISO timestamps. */
  last_rotation: string;
  next_rotation: string;
}

/** A user being created: written before CreateUser, deleted once it is complete or rolled back. */
export interface WalEntry {
  username: string;
  /** Unix milliseconds. */
  created_at: number;
}

export const CONFIG = new RecordStore<RootConfig>('config/');
export const LEASE_CONFIG = new RecordStore<LeaseConfig>('config/');
export const ROLES = new RecordStore<RoleRecord>('role/');
export const STATIC_ROLES = new RecordStore<StaticRoleRecord>('static-role/');
export const WAL = new RecordStore<WalEntry>('wal/');
