/** config/:name, reset/:name and rotate-root/:name: the database connections. */
import { listPath, type FieldData, type FieldMap, type PathDeclaration, type Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { openPlugin } from '../connections';
import { merged, statements, type DatabaseEngine } from '../engine';
import { scrub, talkToDatabase } from '../errors';
import { findPlugin, PLUGINS, type PluginDefinition } from '../plugins';
import { CONNECTIONS, type ConnectionRecord } from '../records';
import { renderUsername, TemplateError } from '@svc/username-template';

const NAME: FieldMap = { name: { type: 'name', description: 'Name of the connection.' } };

/** Plugin-specific fields of every builtin plugin, declared once for the config path. */
const PLUGIN_FIELDS: FieldMap = Object.assign({}, ...[...PLUGINS.values()].map((plugin) => plugin.fields));

const CONNECTION_FIELDS: FieldMap = {
  ...NAME,
  plugin_name: { type: 'string', description: `Database plugin: ${[...PLUGINS.keys()].join(', ')}. Required when creating.` },
  plugin_version: { type: 'string', default: '', description: 'Semantic version of the plugin; empty for the builtin one.' },
  verify_connection: { type: 'bool', default: true, description: 'Connect to the database when the configuration is written.' },
  allowed_roles: { type: 'comma-string-list', default: [], description: 'Roles allowed to use this connection; "*" allows any.' },
  root_rotation_statements: { type: 'list', default: [], description: "Statements that change the root user's password (rotate-root)." },
  password_policy: { type: 'string', default: '', description: 'Named password policy for generated passwords; empty for the default policy.' },
  username: { type: 'string', default: '', description: 'Root user that creates, updates and deletes managed users; `{{username}}` in the URL.' },
  password: { type: 'string', default: '', sensitive: true, description: "Root user's password; `{{password}}` in the URL. Never returned." },
  disable_escaping: { type: 'bool', default: false, description: 'Insert username and password into the connection URL without percent-encoding.' },
  username_template: { type: 'string', default: '', description: "Template for dynamic usernames; empty for the plugin's default." },
  ...PLUGIN_FIELDS,
};

// A password written into the URL itself is hidden on read, like the password field.
function connectionDetails(record: ConnectionRecord): Record<string, unknown> {
  const details: Record<string, unknown> = { ...record.details, username: record.username, disable_escaping: record.disable_escaping, username_template: record.username_template };
  if (typeof details.connection_url === 'string') details.connection_url = scrub(details.connection_url, [record.password]);
  return details;
}

function describeConnection(record: ConnectionRecord): Record<string, unknown> {
  return {
    plugin_name: record.plugin_name,
    plugin_version: record.plugin_version,
    allowed_roles: record.allowed_roles,
    connection_details: connectionDetails(record),
    password_policy: record.password_policy,
    root_credentials_rotate_statements: record.root_rotation_statements,
    verify_connection: record.verify_connection,
  };
}

function pluginDetails(definition: PluginDefinition, fields: FieldData, stored: Record<string, unknown> | undefined): Record<string, unknown> {
  const details = Object.fromEntries(Object.keys(definition.fields).map((key) => [key, merged(fields, key, stored?.[key])]));
  for (const key of definition.requiredFields) {
    if (details[key] === undefined || details[key] === '') throw ServiceError.badRequest(`missing required field "${key}" for ${definition.name}`);
  }
  return details;
}

/** The connection a write describes: the stored one with the sent fields replaced. */
function connectionRecord(fields: FieldData, stored: ConnectionRecord | null): { record: ConnectionRecord; definition: PluginDefinition } {
  const pluginName = merged<string>(fields, 'plugin_name', stored?.plugin_name);
  if (!pluginName) throw ServiceError.badRequest('missing required field "plugin_name"');
  if (stored && pluginName !== stored.plugin_name) {
    throw ServiceError.badRequest(`field "plugin_name": connection uses ${stored.plugin_name}; delete it to change the plugin`);
  }
  const definition = findPlugin(pluginName, fields.get('plugin_version'));
  const record: ConnectionRecord = {
    plugin_name: pluginName,
    plugin_version: definition.version,
    verify_connection: merged(fields, 'verify_connection', stored?.verify_connection),
    allowed_roles: merged(fields, 'allowed_roles', stored?.allowed_roles),
    root_rotation_statements: statements(fields, 'root_rotation_statements', stored?.root_rotation_statements),
    password_policy: merged(fields, 'password_policy', stored?.password_policy),
    username: merged(fields, 'username', stored?.username),
    password: merged(fields, 'password', stored?.password),
    disable_escaping: merged(fields, 'disable_escaping', stored?.disable_escaping),
    username_template: merged(fields, 'username_template', stored?.username_template),
    details: pluginDetails(definition, fields, stored?.details),
  };
  try {
    renderUsername(record.username_template, { DisplayName: 'token', RoleName: 'role' });
  } catch (err) {
    if (err instanceof TemplateError) throw ServiceError.badRequest(`field "username_template": ${err.message}`);
    throw err;
  }
  return { record, definition };
}

/** Fields sent for another plugin are ignored; say so rather than drop them silently. */
function foreignFieldWarnings(definition: PluginDefinition, fields: FieldData): string[] {
  const foreign = Object.keys(PLUGIN_FIELDS).filter((key) => !(key in definition.fields) && fields.has(key));
  return foreign.length === 0 ? [] : [`fields not used by ${definition.name} were ignored: ${foreign.join(', ')}`];
}

export function configPaths(engine: DatabaseEngine): PathDeclaration[] {
  const writeConnection = async (_req: Request, fields: FieldData) => {
    const name = fields.params.name;
    const { record, definition } = connectionRecord(fields, await CONNECTIONS.get(engine.storage, name));
    const opened = await openPlugin(record);
    if (record.verify_connection) {
      try {
        await talkToDatabase('verify connection', [record.password], () => opened.plugin.verify());
      } catch (err) {
        await opened.plugin.close().catch(() => undefined);
        throw err;
      }
    }
    await CONNECTIONS.put(engine.storage, name, record);
    await engine.connections.install(name, record, opened);
    const warnings = foreignFieldWarnings(definition, fields);
    return warnings.length > 0 ? { warnings } : undefined;
  };

  return [
    listPath({ pattern: 'config/', synopsis: 'Lists the database connections.', summary: 'List the connections.', names: () => CONNECTIONS.list(engine.storage) }),
    {
      pattern: 'config/:name',
      synopsis: 'Configures a connection to a database.',
      description: 'The root credentials given here create, update and delete the managed users. The password is never returned.',
      fields: CONNECTION_FIELDS,
      existenceCheck: (_req, fields) => CONNECTIONS.has(engine.storage, fields.params.name),
      operations: {
        read: {
          summary: 'Read a connection (without its password).',
          handler: async (_req, fields) => {
            const record = await CONNECTIONS.get(engine.storage, fields.params.name);
            return record ? { data: describeConnection(record) } : undefined;
          },
        },
        create: { summary: 'Create a connection.', handler: writeConnection },
        update: { summary: 'Update a connection; fields not sent keep their values.', handler: writeConnection },
        delete: {
          summary: 'Delete a connection and close its pool. Its roles stay and fail until it is recreated.',
          handler: async (_req, fields) => {
            await CONNECTIONS.delete(engine.storage, fields.params.name);
            await engine.connections.close(fields.params.name);
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'reset/:name',
      synopsis: 'Closes a connection and its plugin and reopens them from the stored configuration.',
      fields: NAME,
      operations: {
        update: {
          summary: 'Reset a connection.',
          handler: async (_req, fields) => {
            const name = fields.params.name;
            await engine.connections.close(name);
            const { record, plugin } = await engine.connections.get(engine.storage, name);
            await talkToDatabase('verify connection', [record.password], () => plugin.verify());
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'rotate-root/:name',
      synopsis: "Rotates the connection's root password; the new one is never shown.",
      description: 'The root user must be able to change its own password. The old password stops working.',
      fields: NAME,
      operations: {
        update: {
          summary: 'Rotate the root credentials.',
          handler: async (_req, fields) => {
            const name = fields.params.name;
            const { record, plugin } = await engine.connections.get(engine.storage, name);
            if (!record.username) throw ServiceError.badRequest(`connection "${name}" has no username to rotate`);
            const password = await engine.password(record.password_policy);
            await talkToDatabase('rotate root credentials', [record.password, password], () =>
              plugin.updateUser({ username: record.username, credential: { value: { password }, statements: record.root_rotation_statements } }),
            );
            await CONNECTIONS.put(engine.storage, name, { ...record, password });
            await engine.connections.close(name);
            return undefined;
          },
        },
      },
    },
  ];
}
