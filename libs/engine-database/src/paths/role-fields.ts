/** Fields and checks shared by dynamic and static roles. */
import type { FieldData, FieldMap } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { CREDENTIAL_TYPES, SECRET_CONFIG_KEYS, validateCredentialConfig } from '../credentials';
import { merged } from '../engine';
import type { CredentialType } from '../plugins';
import type { OpenConnection } from '../connections';

export const ROLE_NAME: FieldMap = { name: { type: 'name', description: 'Name of the role.' } };

export const CREDENTIAL_FIELDS: FieldMap = {
  db_name: { type: 'string', description: 'Name of the connection the role uses. Required when creating.' },
  credential_type: { type: 'string', default: 'password', allowed: CREDENTIAL_TYPES, description: 'Kind of credential: password, rsa_private_key or client_certificate.' },
  credential_config: {
    type: 'map',
    default: {},
    description: 'Settings of the credential type: password_policy; key_bits, format; common_name_template, ca_cert, ca_private_key, key_type, key_bits, signature_bits.',
  },
};

/** Statement fields take a list, or one string holding one or more statements. */
export const STATEMENT_FIELD_NAMES = ['creation_statements', 'revocation_statements', 'rollback_statements', 'renew_statements', 'rotation_statements', 'root_rotation_statements'];

export interface CredentialSettings {
  db_name: string;
  credential_type: CredentialType;
  credential_config: Record<string, string>;
}

/** db_name, credential_type and credential_config of a write, merged with the stored role. */
export function credentialSettings(fields: FieldData, stored: CredentialSettings | null): CredentialSettings {
  const dbName = merged<string>(fields, 'db_name', stored?.db_name);
  if (!dbName) throw ServiceError.badRequest('missing required field "db_name"');
  const type = merged<CredentialType>(fields, 'credential_type', stored?.credential_type);
  const config = fields.has('credential_config') ? fields.get<Record<string, unknown>>('credential_config') : (stored?.credential_config ?? {});
  return { db_name: dbName, credential_type: type, credential_config: validateCredentialConfig(type, config) };
}

/** The connection's plugin must support the role's credential type. */
export function checkCredentialSupported(connection: OpenConnection, type: CredentialType): void {
  if (!connection.definition.credentialTypes.includes(type)) {
    throw ServiceError.badRequest(`field "credential_type": ${connection.definition.name} does not support ${type}`);
  }
}

/** credential_config as a reader sees it: without the CA's private key. */
export function visibleCredentialConfig(config: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(config).filter(([key]) => !SECRET_CONFIG_KEYS.includes(key)));
}
