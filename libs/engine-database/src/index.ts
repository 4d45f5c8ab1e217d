export { databaseBackendFactory, createDatabaseBackendFactory, DatabaseBackend, databaseDeclaration } from './database-backend';
export type { DatabaseEngineOptions } from './engine';
export { defaultPolicyResolver, type PasswordPolicyResolver } from './passwords';
export { PLUGINS, type PluginDefinition, type DatabasePlugin, type CredentialType } from './plugins';
