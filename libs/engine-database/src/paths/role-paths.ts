/** roles/:name and creds/:name: dynamic roles and the short-lived users they create. */
import { listPath, type FieldData, type FieldMap, type PathDeclaration, type Request, type SecretType } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { checkRoleAllowed } from '../connections';
import { issueCredential } from '../credentials';
import { merged, statements, type DatabaseEngine } from '../engine';
import { talkToDatabase } from '../errors';
import { ROLES, type RoleRecord } from '../records';
import { leaseLimits } from '../ttl';
import { checkCredentialSupported, credentialSettings, CREDENTIAL_FIELDS, ROLE_NAME, visibleCredentialConfig } from './role-fields';

const ROLE_FIELDS: FieldMap = {
  ...ROLE_NAME,
  ...CREDENTIAL_FIELDS,
  default_ttl: { type: 'duration', default: 0, description: "Lease TTL of the credentials; 0 for the mount's default." },
  max_ttl: { type: 'duration', default: 0, description: "Longest a lease may be renewed to; 0 for the mount's maximum, which it cannot exceed." },
  creation_statements: { type: 'list', description: 'Statements that create the user; may template {{name}}, {{password}}, {{expiration}}, {{public_key}}. Required when creating.' },
  revocation_statements: { type: 'list', default: [], description: "Statements that remove the user; empty for the plugin's default." },
  rollback_statements: { type: 'list', default: [], description: 'Statements run when creation fails; empty to drop whatever was created.' },
  renew_statements: { type: 'list', default: [], description: "Statements run when the lease is renewed (PostgreSQL default: VALID UNTIL)." },
};

function describeRole(role: RoleRecord): Record<string, unknown> {
  return { ...role, credential_config: visibleCredentialConfig(role.credential_config) };
}

async function roleRecord(engine: DatabaseEngine, fields: FieldData): Promise<RoleRecord> {
  const stored = await ROLES.get(engine.storage, fields.params.name);
  const credential = credentialSettings(fields, stored);
  const creation = statements(fields, 'creation_statements', stored?.creation_statements);
  if (creation.length === 0) throw ServiceError.badRequest('missing required field "creation_statements"');
  const role: RoleRecord = {
    ...credential,
    creation_statements: creation,
    revocation_statements: statements(fields, 'revocation_statements', stored?.revocation_statements),
    rollback_statements: statements(fields, 'rollback_statements', stored?.rollback_statements),
    renew_statements: statements(fields, 'renew_statements', stored?.renew_statements),
    default_ttl: merged(fields, 'default_ttl', stored?.default_ttl),
    max_ttl: merged(fields, 'max_ttl', stored?.max_ttl),
  };
  if (role.max_ttl > 0 && role.default_ttl > role.max_ttl) throw ServiceError.badRequest('field "default_ttl": cannot be greater than max_ttl');
  checkCredentialSupported(await engine.connections.get(engine.storage, role.db_name), role.credential_type);
  return role;
}

async function requireRole(engine: DatabaseEngine, name: string): Promise<RoleRecord> {
  const role = await ROLES.get(engine.storage, name);
  if (!role) throw ServiceError.badRequest(`unknown role "${name}"`);
  return role;
}

export function rolePaths(engine: DatabaseEngine): PathDeclaration[] {
  const writeRole = async (_req: Request, fields: FieldData) => {
    await ROLES.put(engine.storage, fields.params.name, await roleRecord(engine, fields));
    return undefined;
  };

  return [
    listPath({ pattern: 'roles/', synopsis: 'Lists the dynamic roles.', summary: 'List the roles.', names: () => ROLES.list(engine.storage) }),
    {
      pattern: 'roles/:name',
      synopsis: 'Manages roles that create short-lived database users.',
      fields: ROLE_FIELDS,
      existenceCheck: (_req, fields) => ROLES.has(engine.storage, fields.params.name),
      operations: {
        read: {
          summary: 'Read a role.',
          handler: async (_req, fields) => {
            const role = await ROLES.get(engine.storage, fields.params.name);
            return role ? { data: describeRole(role) } : undefined;
          },
        },
        create: { summary: 'Create a role.', handler: writeRole },
        update: { summary: 'Update a role; fields not sent keep their values.', handler: writeRole },
        delete: {
          summary: 'Delete a role. Users it created stay until their leases are revoked.',
          handler: async (_req, fields) => {
            await ROLES.delete(engine.storage, fields.params.name);
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'creds/:name',
      synopsis: "Creates a database user with the role's statements and returns its credentials under a lease.",
      fields: ROLE_NAME,
      operations: {
        read: {
          summary: 'Generate credentials.',
          handler: async (req, fields) => {
            const name = fields.params.name;
            const role = await requireRole(engine, name);
            const connection = await engine.connections.get(engine.storage, role.db_name);
            checkRoleAllowed(connection.record, role.db_name, name);
            const { ttl, maxTtl } = leaseLimits(role, req.mount);
            const usernameContext = engine.usernameContext(req, name);
            const credential = await issueCredential(role.credential_type, role.credential_config, {
              username: engine.username(connection.record, connection.definition, usernameContext),
              usernameContext,
              ttlSeconds: ttl,
              password: (policy) => engine.password(policy || connection.record.password_policy),
            });
            await talkToDatabase('create user', [connection.record.password, credential.plugin.password ?? ''], () =>
              connection.plugin.newUser({
                username: credential.username,
                credential: credential.plugin,
                expiration: new Date(Date.now() + ttl * 1000),
                statements: role.creation_statements,
                rollbackStatements: role.rollback_statements,
              }),
            );
            return {
              data: { username: credential.username, ...credential.response },
              secret: {
                type: 'creds',
                internalData: { username: credential.username, role: name, db_name: role.db_name, issued_at: Date.now() },
                ttl,
                maxTtl,
                renewable: true,
              },
            };
          },
        },
      },
    },
  ];
}

interface CredsLease {
  username: string;
  role: string;
  db_name: string;
  issued_at: number;
}

function leaseOf(internalData: Record<string, unknown>): CredsLease {
  const { username, role, db_name: dbName, issued_at: issuedAt } = internalData;
  if (typeof username !== 'string' || typeof role !== 'string' || typeof dbName !== 'string' || typeof issuedAt !== 'number') {
    throw ServiceError.badRequest('lease data of a database credential is incomplete');
  }
  return { username, role, db_name: dbName, issued_at: issuedAt };
}

/**
 * The `creds` lease: renewal extends the user's expiry (renew statements) up to the role's max TTL
 * counted from issue; revocation and expiry remove the user (revocation statements, or the
 * plugin's default when the role is gone). Renewal's ttl and maxTtl count from now.
 */
export function credsSecret(engine: DatabaseEngine): SecretType {
  return {
    description: 'Credentials of a database user created by a dynamic role.',
    renew: async (req, internalData) => {
      const lease = leaseOf(internalData);
      const role = await ROLES.get(engine.storage, lease.role);
      if (!role) throw ServiceError.badRequest(`role "${lease.role}" no longer exists; its credentials cannot be renewed`);
      const limits = leaseLimits(role, req.mount);
      const remaining = limits.maxTtl - Math.floor((Date.now() - lease.issued_at) / 1000);
      const increment = typeof req.data.increment === 'number' && req.data.increment > 0 ? req.data.increment : limits.ttl;
      const ttl = Math.min(increment, remaining);
      if (ttl <= 0) throw ServiceError.badRequest('the lease has reached its max_ttl and cannot be renewed');
      const { record, plugin } = await engine.connections.get(engine.storage, lease.db_name);
      await talkToDatabase('renew user', [record.password], () =>
        plugin.updateUser({ username: lease.username, expiration: { value: new Date(Date.now() + ttl * 1000), statements: role.renew_statements } }),
      );
      return { secret: { type: 'creds', internalData, ttl, maxTtl: remaining, renewable: true } };
    },
    revoke: async (_req, internalData) => {
      const lease = leaseOf(internalData);
      const role = await ROLES.get(engine.storage, lease.role);
      const { record, plugin } = await engine.connections.get(engine.storage, lease.db_name);
      await talkToDatabase('revoke user', [record.password], () =>
        plugin.deleteUser({ username: lease.username, statements: role?.revocation_statements ?? [] }),
      );
    },
  };
}
