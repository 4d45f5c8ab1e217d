import { randomUUID } from 'node:crypto';
import type { BackendFactory } from '@svc/engine-host';
import {
  addressAllowed,
  Backend,
  listPath, listResponse,
  renewedAuth,
  tokenAuth,
  validateCidrs,
  type AuthResponse,
  type BackendDeclaration,
  type FieldData,
  type FieldMap,
  type PathDeclaration,
  type Request,
  type Response,
} from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';
import { readRole, resetField, ROLE_FIELDS, roleData, Roles, type Role } from './roles';
import { SecretIds, type NewSecretId, type SecretIdEntry } from './secret-ids';

const HELP =
  'The approle auth method: machines and applications log in with a role ID and a secret ID. Roles ' +
  'set what the tokens get (token_* fields) and how secret IDs are bound (uses, TTL, CIDR blocks).';

/** Vault's answer to any failed login, so a caller cannot tell which half was wrong. */
const INVALID_LOGIN = 'invalid role or secret ID';

const ROLE_NAME: FieldMap = { role_name: { type: 'string', description: 'Name of the role (case-insensitive).' } };

const SECRET_ID_FIELDS: FieldMap = {
  metadata: { type: 'map', default: {}, description: 'Metadata (string values) attached to the secret ID and to the tokens of its logins.' },
  cidr_list: { type: 'comma-string-list', default: [], description: 'CIDR blocks logins with this secret ID may come from (within the role\'s).' },
  token_bound_cidrs: { type: 'comma-string-list', default: [], description: 'CIDR blocks the tokens of its logins may be used from (within the role\'s).' },
  num_uses: { type: 'int', description: 'Logins the secret ID allows; default the role\'s secret_id_num_uses.' },
  ttl: { type: 'duration', description: 'Lifetime of the secret ID; default the role\'s secret_id_ttl.' },
};

const SECRET_ID_FIELD: FieldMap = { secret_id: { type: 'string', sensitive: true, required: true, description: 'The secret ID.' } };
const ACCESSOR_FIELD: FieldMap = { secret_id_accessor: { type: 'string', required: true, description: 'Accessor of the secret ID.' } };

/**
 * The role's fields that also have a path of their own (`role/:role_name/<path>`), as Vault has
 * them; `policies` and `period` also answer under their legacy names.
 */
const FIELD_PATHS: Record<string, keyof Role> = {
  policies: 'token_policies',
  'secret-id-num-uses': 'secret_id_num_uses',
  'secret-id-ttl': 'secret_id_ttl',
  'token-ttl': 'token_ttl',
  'token-max-ttl': 'token_max_ttl',
  'token-num-uses': 'token_num_uses',
  'token-bound-cidrs': 'token_bound_cidrs',
  'secret-id-bound-cidrs': 'secret_id_bound_cidrs',
  'bind-secret-id': 'bind_secret_id',
  period: 'token_period',
  'local-secret-ids': 'local_secret_ids',
};
const LEGACY_NAMES: Partial<Record<keyof Role, string>> = { token_policies: 'policies', token_period: 'period' };
/** Set only when the role is created. */
const READ_ONLY_FIELDS = new Set<keyof Role>(['local_secret_ids']);

export const approleBackendFactory: BackendFactory = (_mount, context) => new Backend(approleDeclaration(context.storage));

export function approleDeclaration(storage: StorageView): BackendDeclaration {
  const stores = { roles: new Roles(storage), secretIds: new SecretIds(storage) };
  const roleName = (f: FieldData) => f.params.role_name.toLowerCase();
  const existingRole = (f: FieldData) => stores.roles.require(roleName(f));

  const rolePaths: PathDeclaration[] = [
    listPath({ pattern: 'role/', synopsis: 'Lists the roles.', summary: 'List the roles.', names: () => stores.roles.names() }),
    {
      pattern: 'role/:role_name',
      synopsis: 'Creates, reads, updates or deletes a role.',
      fields: { ...ROLE_NAME, ...ROLE_FIELDS },
      existenceCheck: async (_req, f) => (await stores.roles.get(roleName(f))) !== null,
      operations: {
        read: {
          summary: 'Read a role.',
          handler: async (_req, f) => {
            const role = await stores.roles.get(roleName(f));
            return role ? { data: roleData(role) } : undefined;
          },
        },
        create: { summary: 'Create a role.', handler: (_req, f) => writeRole(f, null) },
        update: { summary: 'Update a role.', handler: async (_req, f) => writeRole(f, await stores.roles.get(roleName(f))) },
        delete: {
          summary: 'Delete a role and its secret IDs.',
          handler: async (_req, f) => {
            const { roles, secretIds } = stores;
            const role = await roles.get(roleName(f));
            if (role) {
              await secretIds.removeRole(role.name);
              await roles.remove(role);
            }
            return undefined;
          },
        },
      },
    },
    ...Object.entries(FIELD_PATHS).map(([path, field]) => fieldPath(path, field)),
    {
      pattern: 'role/:role_name/role-id',
      synopsis: 'Reads or sets the role ID of a role.',
      fields: { ...ROLE_NAME, role_id: { type: 'string', required: true, description: 'The role ID.' } },
      operations: {
        read: { summary: 'Read the role ID.', handler: async (_req, f) => ({ data: { role_id: (await existingRole(f)).role_id } }) },
        update: { summary: 'Set a custom role ID.', handler: async (_req, f) => writeRole(f, await existingRole(f)) },
      },
    },
  ];

  function fieldPath(path: string, field: keyof Role): PathDeclaration {
    const names = [field, ...(LEGACY_NAMES[field] ? [LEGACY_NAMES[field]] : [])];
    const fields: FieldMap = { ...ROLE_NAME, ...Object.fromEntries(names.map((name) => [name, ROLE_FIELDS[name]])) };
    const read = {
      summary: `Read the role's ${field}.`,
      handler: async (_req: Request, f: FieldData): Promise<Response> => {
        const value = (await existingRole(f))[field];
        return { data: Object.fromEntries(names.map((name) => [name, value])) };
      },
    };
    if (READ_ONLY_FIELDS.has(field)) return { pattern: `role/:role_name/${path}`, synopsis: `Reads the role's ${field}.`, fields, operations: { read } };
    return {
      pattern: `role/:role_name/${path}`,
      synopsis: `Reads, sets or resets the role's ${field}.`,
      fields,
      operations: {
        read,
        update: {
          summary: `Set the role's ${field}.`,
          handler: async (_req, f) => {
            if (!names.some((name) => f.has(name))) throw ServiceError.badRequest(`missing required field "${field}"`);
            return writeRole(f, await existingRole(f));
          },
        },
        delete: {
          summary: `Reset the role's ${field} to its default.`,
          handler: async (_req, f) => {
            const role = await existingRole(f);
            await stores.roles.put(resetField(role, field));
            return undefined;
          },
        },
      },
    };
  }

  async function writeRole(f: FieldData, existing: Role | null): Promise<undefined> {
    const role = readRole(roleName(f), f, existing);
    await stores.roles.put(role, existing?.role_id);
    return undefined;
  }

  const secretIdPaths: PathDeclaration[] = [
    {
      pattern: 'role/:role_name/secret-id',
      synopsis: 'Generates a secret ID for a role.',
      fields: { ...ROLE_NAME, ...SECRET_ID_FIELDS },
      operations: { update: { summary: 'Generate a secret ID.', handler: async (_req, f) => issueSecretId(f, randomUUID()) } },
    },
    {
      pattern: 'role/:role_name/secret-id/',
      synopsis: 'Lists the accessors of a role\'s secret IDs.',
      fields: ROLE_NAME,
      operations: {
        list: {
          summary: 'List secret ID accessors.',
          handler: async (_req, f) => listResponse(await stores.secretIds.accessors((await existingRole(f)).name)),
        },
      },
    },
    {
      pattern: 'role/:role_name/custom-secret-id',
      synopsis: 'Registers a secret ID of the caller\'s choosing for a role.',
      fields: { ...ROLE_NAME, ...SECRET_ID_FIELD, ...SECRET_ID_FIELDS },
      operations: { update: { summary: 'Register a custom secret ID.', handler: async (_req, f) => issueSecretId(f, f.get('secret_id')) } },
    },
    {
      pattern: 'role/:role_name/secret-id/lookup',
      synopsis: 'Reads the properties of a secret ID.',
      fields: { ...ROLE_NAME, ...SECRET_ID_FIELD },
      operations: {
        update: {
          summary: 'Look up a secret ID.',
          handler: async (_req, f) => secretIdAnswer(await stores.secretIds.lookup((await existingRole(f)).name, f.get('secret_id'))),
        },
      },
    },
    {
      pattern: 'role/:role_name/secret-id/destroy',
      synopsis: 'Destroys a secret ID.',
      fields: { ...ROLE_NAME, ...SECRET_ID_FIELD },
      operations: destroyOperations('Destroy a secret ID.', async (f) => stores.secretIds.destroy((await existingRole(f)).name, f.get('secret_id'))),
    },
    {
      pattern: 'role/:role_name/secret-id-accessor/lookup',
      synopsis: 'Reads the properties of a secret ID by its accessor.',
      fields: { ...ROLE_NAME, ...ACCESSOR_FIELD },
      operations: {
        update: {
          summary: 'Look up a secret ID by accessor.',
          handler: async (_req, f) => {
            const entry = await stores.secretIds.lookupAccessor((await existingRole(f)).name, f.get('secret_id_accessor'));
            if (!entry) throw ServiceError.notFound(`no secret ID has the accessor "${f.get<string>('secret_id_accessor')}"`);
            return { data: { ...entry } };
          },
        },
      },
    },
    {
      pattern: 'role/:role_name/secret-id-accessor/destroy',
      synopsis: 'Destroys a secret ID by its accessor.',
      fields: { ...ROLE_NAME, ...ACCESSOR_FIELD },
      operations: destroyOperations('Destroy a secret ID by accessor.', async (f) =>
        stores.secretIds.destroyAccessor((await existingRole(f)).name, f.get('secret_id_accessor')),
      ),
    },
    {
      pattern: 'tidy/secret-id',
      synopsis: 'Removes expired secret IDs and dangling accessors.',
      operations: {
        update: {
          summary: 'Tidy the secret IDs.',
          handler: async () => {
            const removed = await stores.secretIds.tidy();
            return { data: { secret_ids_removed: removed.secretIds, accessors_removed: removed.accessors } };
          },
        },
      },
    },
  ];

  async function issueSecretId(f: FieldData, secretId: string): Promise<Response> {
    const role = await existingRole(f);
    if (!role.bind_secret_id) throw ServiceError.badRequest(`role "${role.name}" does not bind secret IDs (bind_secret_id is false)`);
    const entry = await stores.secretIds.create(role.name, secretId, secretIdSettings(role, f));
    return {
      data: {
        secret_id: secretId,
        secret_id_accessor: entry.secret_id_accessor,
        secret_id_ttl: entry.secret_id_ttl,
        secret_id_num_uses: entry.secret_id_num_uses,
      },
    };
  }

  const loginPath: PathDeclaration = {
    pattern: 'login',
    synopsis: 'Logs in with a role ID and a secret ID.',
    fields: {
      role_id: { type: 'string', required: true, description: 'The role ID.' },
      secret_id: { type: 'string', sensitive: true, default: '', description: 'A secret ID of the role (when the role binds them).' },
    },
    operations: { update: { summary: 'Log in.', unauthenticated: true, handler: async (req, f) => ({ auth: await login(req, f) }) } },
  };

  async function login(req: Request, f: FieldData): Promise<AuthResponse> {
    const { roles, secretIds } = stores;
    const role = await roles.byRoleId(f.get('role_id'));
    if (!role) throw ServiceError.badRequest(INVALID_LOGIN);
    refuseAddress(role.secret_id_bound_cidrs, req, 'role');
    let secretId: SecretIdEntry | null = null;
    if (role.bind_secret_id) {
      if (!f.get<string>('secret_id')) throw ServiceError.badRequest('missing required field "secret_id"');
      secretId = await secretIds.spend(role.name, f.get('secret_id'), (entry) => refuseAddress(entry.cidr_list, req, 'secret ID'));
      if (!secretId) throw ServiceError.badRequest(INVALID_LOGIN);
    }
    const metadata = { ...secretId?.metadata, role_name: role.name };
    return tokenAuth(role, {
      displayName: role.name,
      metadata,
      alias: { name: role.role_id, metadata },
      internalData: { role_name: role.name, role_id: role.role_id },
      boundCidrs: secretId?.token_bound_cidrs,
    });
  }

  return {
    type: 'approle',
    help: HELP,
    paths: [...rolePaths, ...secretIdPaths, loginPath],
    // As Vault: the role must still exist with the same role ID; TTLs and policies are the role's now.
    renewAuth: async (_req, auth) => {
      const name = String(auth.internalData?.role_name ?? '');
      const role = await stores.roles.get(name);
      if (!role) throw ServiceError.badRequest(`role "${name}" no longer exists; the token cannot be renewed`);
      if (role.role_id !== auth.internalData?.role_id) throw ServiceError.badRequest(`the role ID of role "${name}" changed; the token cannot be renewed`);
      return renewedAuth(role, auth);
    },
    periodic: async () => {
      await stores.secretIds.tidy();
    },
  };
}

/** What a new secret ID gets: the request's settings, within the role's. */
function secretIdSettings(role: Role, f: FieldData): NewSecretId {
  const numUses = f.has('num_uses') ? f.get<number>('num_uses') : role.secret_id_num_uses;
  if (numUses < 0) throw ServiceError.badRequest('field "num_uses" cannot be negative');
  if (role.secret_id_num_uses > 0 && (numUses === 0 || numUses > role.secret_id_num_uses)) {
    throw ServiceError.badRequest(`field "num_uses" cannot be more than the role's secret_id_num_uses (${role.secret_id_num_uses})`);
  }
  const ttl = f.has('ttl') ? f.get<number>('ttl') : role.secret_id_ttl;
  if (role.secret_id_ttl > 0 && (ttl === 0 || ttl > role.secret_id_ttl)) {
    throw ServiceError.badRequest(`field "ttl" cannot be longer than the role's secret_id_ttl (${role.secret_id_ttl}s)`);
  }
  const metadata = f.get<Record<string, unknown>>('metadata');
  if (Object.values(metadata).some((value) => typeof value !== 'string')) throw ServiceError.badRequest('field "metadata": values must be strings');
  return {
    secret_id_num_uses: numUses,
    secret_id_ttl: ttl,
    metadata: metadata as Record<string, string>,
    cidr_list: within('cidr_list', f.get('cidr_list'), role.secret_id_bound_cidrs),
    token_bound_cidrs: within('token_bound_cidrs', f.get('token_bound_cidrs'), role.token_bound_cidrs),
  };
}

/** CIDR blocks checked, and each inside one of the role's (when the role has any). */
function within(field: string, cidrs: string[], roleCidrs: string[]): string[] {
  const blocks = validateCidrs(field, cidrs);
  const outside = roleCidrs.length === 0 ? [] : blocks.filter((block) => !roleCidrs.some((outer) => blockWithin(block, outer)));
  if (outside.length > 0) throw ServiceError.badRequest(`field "${field}": ${outside.join(', ')} not within the role's CIDR blocks`);
  return blocks;
}

/** Whether CIDR block `inner` lies inside `outer`: at least as long a prefix, and its address inside. */
function blockWithin(inner: string, outer: string): boolean {
  const prefixOf = (block: string) => Number(block.split('/')[1] ?? (block.includes(':') ? 128 : 32));
  return prefixOf(inner) >= prefixOf(outer) && addressAllowed([outer], inner.split('/')[0]);
}

function refuseAddress(cidrs: string[], req: Request, owner: 'role' | 'secret ID'): void {
  if (!addressAllowed(cidrs, req.remoteAddress)) {
    throw ServiceError.forbidden(`permission denied: source address "${req.remoteAddress ?? ''}" is not allowed by the ${owner}'s CIDR blocks`);
  }
}

/** Vault's destroy paths answer both POST and DELETE. */
function destroyOperations(summary: string, destroy: (f: FieldData) => Promise<void>): PathDeclaration['operations'] {
  const handler = async (_req: Request, f: FieldData): Promise<undefined> => {
    await destroy(f);
    return undefined;
  };
  return { update: { summary, handler }, delete: { summary, handler } };
}

function secretIdAnswer(entry: SecretIdEntry | null): Response | undefined {
  return entry ? { data: { ...entry } } : undefined;
}
