/** What the engine keeps in its mount's storage (encrypted by the barrier), one JSON record per name. */
import { RecordStore } from '@svc/storage';
import type { CredentialType } from './plugins';

export interface ConnectionRecord {
  plugin_name: string;
  plugin_version: string;
  verify_connection: boolean;
  allowed_roles: string[];
  root_rotation_statements: string[];
  password_policy: string;
  username: string;
  password: string;
  disable_escaping: boolean;
  username_template: string;
  /** Plugin-specific fields (connection_url, host, port, ...). */
  details: Record<string, unknown>;
}

export interface RoleRecord {
  db_name: string;
  credential_type: CredentialType;
  credential_config: Record<string, string>;
  creation_statements: string[];
  revocation_statements: string[];
  rollback_statements: string[];
  renew_statements: string[];
  default_ttl: number;
  max_ttl: number;
}

export interface StaticRoleRecord {
  db_name: string;
  username: string;
  credential_type: CredentialType;
  credential_config: Record<string, string>;
  rotation_statements: string[];
  rotation_period?: number;
  rotation_schedule?: string;
  rotation_window?: number;
  /** The current credential as the client receives it (`password` or `rsa_private_key`). */
  credential: Record<string, string>;
  /** ISO timestamps. */
  last_rotation: string;
  next_rotation: string;
  /** Fencing token of the lock held by the rotation that wrote this record. */
  fence: number;
  last_rotation_error?: string;
}

export const CONNECTIONS = new RecordStore<ConnectionRecord>('config/');
export const ROLES = new RecordStore<RoleRecord>('role/');
export const STATIC_ROLES = new RecordStore<StaticRoleRecord>('static-role/');
