/** What the cloud auth method keeps in its mount's storage (encrypted by the barrier), one JSON record per name. */
import type { ProviderConfig } from '@svc/cloud-provider';
import type { TokenSettings } from '@svc/framework';
import { RecordStore } from '@svc/storage';

/** config/client: the provider access of the method and the checks of iam logins. */
export interface ClientConfig extends ProviderConfig {
  /** EC2 endpoint URL override. */
  endpoint: string;
  sts_region: string;
  use_sts_region_from_client: boolean;
  iam_server_id_header_value: string;
  allowed_sts_header_values: string[];
}

/** config/identity: how logins name their entity alias and what they record on it. */
export interface IdentityConfig {
  iam_alias: string;
  iam_metadata: string[];
  vm_alias: string;
  vm_metadata: string[];
}

export interface CertificateRecord {
  /** PEM. */
  cloud_public_cert: string;
  type: 'pkcs7' | 'identity';
}

export interface StsRecord {
  sts_role: string;
}

export interface TidyConfig {
  /** Seconds. */
  safety_buffer: number;
  disable_periodic_tidy: boolean;
}

export const AUTH_TYPES = ['iam', 'vm'] as const;
export type AuthType = (typeof AUTH_TYPES)[number];

/** A login role (Vault's awsRoleEntry with this project's names). */
export interface RoleRecord extends TokenSettings {
  auth_type: AuthType;
  bound_image_id: string[];
  bound_account_id: string[];
  bound_region: string[];
  bound_vpc_id: string[];
  bound_subnet_id: string[];
  bound_iam_role_arn: string[];
  bound_iam_instance_profile_arn: string[];
  bound_vm_instance_id: string[];
  bound_iam_principal_arn: string[];
  /** The unique ids `bound_iam_principal_arn` resolved to (non-wildcard entries), when `resolve_cloud_unique_ids`. */
  bound_iam_principal_id: string[];
  role_tag: string;
  inferred_entity_type: string;
  inferred_cloud_region: string;
  resolve_cloud_unique_ids: boolean;
  allow_instance_migration: boolean;
  disallow_reauthentication: boolean;
  role_id: string;
  /** Key of the HMAC that role tags of this role carry (never shown). */
  hmac_key: string;
}

/** An instance that logged in by vm (the identity access list), by instance id. */
export interface AccessListEntry {
  role: string;
  client_nonce: string;
  creation_time: string;
  expiration_time: string;
  last_updated_time: string;
  pending_time: string;
  disallow_reauthentication: boolean;
}

/** A role tag that may no longer log in (the role tag deny list). */
export interface DenyListEntry {
  creation_time: string;
  expiration_time: string;
}

export const CLIENT_CONFIG = new RecordStore<ClientConfig>('config/');
export const IDENTITY_CONFIG = new RecordStore<IdentityConfig>('config/');
export const CERTIFICATES = new RecordStore<CertificateRecord>('config/certificate/');
export const STS_ROLES = new RecordStore<StsRecord>('config/sts/');
export const TIDY_CONFIG = new RecordStore<TidyConfig>('config/tidy/');
export const ROLES = new RecordStore<RoleRecord>('role/');
export const ACCESS_LIST = new RecordStore<AccessListEntry>('accesslist/');
/** Keyed by the tag in base64url: tags hold characters a storage key cannot. */
export const DENY_LIST = new RecordStore<DenyListEntry>('denylist/');

/** The identity configuration before any is written (Vault's defaults since 1.0.3). */
export const IAM_METADATA_DEFAULT = ['account_id', 'auth_type'];
export const VM_METADATA_DEFAULT = ['account_id', 'auth_type'];
export const IAM_METADATA_FIELDS = ['account_id', 'auth_type', 'canonical_arn', 'client_arn', 'client_user_id', 'inferred_cloud_region', 'inferred_entity_id', 'inferred_entity_type'];
export const VM_METADATA_FIELDS = ['account_id', 'auth_type', 'image_id', 'instance_id', 'region'];
export const DEFAULT_IDENTITY: Readonly<IdentityConfig> = Object.freeze({ iam_alias: 'role_id', iam_metadata: IAM_METADATA_DEFAULT, vm_alias: 'role_id', vm_metadata: VM_METADATA_DEFAULT });

/** Longest an access-list or deny-list entry lives when no TTL bounds it (the system's default maximum). */
export const DEFAULT_ENTRY_TTL = 768 * 3600;

/** Vault's default tidy safety buffer: 72 hours. */
export const DEFAULT_SAFETY_BUFFER = 72 * 3600;
