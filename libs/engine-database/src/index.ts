export { databaseBackendFactory, DatabaseBackend, databaseDeclaration } from './database-backend';
export { PLUGINS, type PluginDefinition, type DatabasePlugin, type CredentialType } from './plugins';
