/**
 * The one interface every database plugin implements (after Vault's database plugin v5 interface):
 * open with connection settings, then create, update and delete users, verify, close. A new
 * database is one file exporting a PluginDefinition, added to the registry in plugins/index.ts.
 */
import type { FieldMap } from '@svc/framework';

/**
 * How long a plugin waits for its database: to connect (and sign in), and for each PostgreSQL query
 * or Redis command. A database that accepts connections and never answers fails the request with a 502.
 */
export const DATABASE_TIMEOUT_MS = 10_000;

export type CredentialType = 'password' | 'rsa_private_key' | 'client_certificate';

/** What the database learns about a new credential: a password, a public key, or nothing (certificates). */
export interface PluginCredential {
  password?: string;
  publicKey?: string;
}

/** Connection settings as stored, with the root user's credentials. */
export interface ConnectionSettings {
  /** Plugin-specific fields (connection_url, host, port, max_open_connections, ...). */
  details: Record<string, unknown>;
  username: string;
  password: string;
  /** Insert username and password into the connection URL without percent-encoding. */
  disableEscaping: boolean;
}

export interface NewUserRequest {
  username: string;
  credential: PluginCredential;
  expiration: Date;
  /** The role's statements as written; each plugin splits and templates them its own way. */
  statements: string[];
  rollbackStatements: string[];
}

export interface UpdateUserRequest {
  username: string;
  /** A new password (or public key) and the statements that set it; empty statements mean the plugin's default. */
  credential?: { value: PluginCredential; statements: string[] };
  /** A new expiry and the statements that set it (lease renewal). */
  expiration?: { value: Date; statements: string[] };
}

export interface DeleteUserRequest {
  username: string;
  statements: string[];
}

export interface DatabasePlugin {
  /** Creates the user; on failure runs the rollback statements (or drops the user) and rethrows. */
  newUser(request: NewUserRequest): Promise<void>;
  updateUser(request: UpdateUserRequest): Promise<void>;
  /** Removes the user; a user that is already gone is not an error for the default statements. */
  deleteUser(request: DeleteUserRequest): Promise<void>;
  /** Connects (if not yet connected) and runs a trivial command. */
  verify(): Promise<void>;
  close(): Promise<void>;
}

export interface PluginDefinition {
  name: string;
  version: string;
  /** Plugin-specific connection fields, stored in `connection_details`. */
  fields: FieldMap;
  /** Plugin-specific fields a connection must have. */
  requiredFields: string[];
  credentialTypes: readonly CredentialType[];
  defaultUsernameTemplate: string;
  /** Applied to usernames made by the default template. */
  maxUsernameLength: number;
  /** Returns a plugin that connects lazily; throws on settings it cannot use (bad URL). */
  open(settings: ConnectionSettings): Promise<DatabasePlugin>;
}

/** Settings a plugin cannot use (a malformed URL); reported as 400 naming the field. */
export class InvalidSettingsError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'InvalidSettingsError';
  }
}
