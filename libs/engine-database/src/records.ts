/** What the engine keeps in its mount's storage (encrypted by the barrier), one JSON record per name. */
import type { StorageView } from '@svc/storage';
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

/** Records of one kind under one storage prefix. */
export class RecordStore<T> {
  constructor(private readonly prefix: string) {}

  get(storage: StorageView, name: string): Promise<T | null> {
    return storage.getJSON<T>(this.prefix + name);
  }

  put(storage: StorageView, name: string, record: T): Promise<void> {
    return storage.putJSON(this.prefix + name, record);
  }

  delete(storage: StorageView, name: string): Promise<void> {
    return storage.delete(this.prefix + name);
  }

  list(storage: StorageView): Promise<string[]> {
    return storage.list(this.prefix);
  }
}

export const CONNECTIONS = new RecordStore<ConnectionRecord>('config/');
export const ROLES = new RecordStore<RoleRecord>('role/');
export const STATIC_ROLES = new RecordStore<StaticRoleRecord>('static-role/');
