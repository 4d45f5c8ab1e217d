export { databaseBackendFactory, DatabaseBackend, databaseDeclaration } from './database-backend';
export { PLUGINS, DATABASE_TIMEOUT_MS, type PluginDefinition, type DatabasePlugin, type CredentialType } from './plugins';
