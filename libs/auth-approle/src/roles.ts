import { randomUUID } from 'node:crypto';
import {
  DEFAULT_TOKEN_SETTINGS,
  readTokenSettings,
  TOKEN_FIELDS,
  tokenSettingsData,
  validateCidrs,
  type FieldData,
  type FieldMap,
  type TokenSettings,
} from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';

/** An approle role as stored (Vault's field names). */
export interface Role extends TokenSettings {
  name: string;
  role_id: string;
  bind_secret_id: boolean;
  secret_id_bound_cidrs: string[];
  secret_id_num_uses: number;
  secret_id_ttl: number;
  local_secret_ids: boolean;
}

type RoleOwnFields = Omit<Role, keyof TokenSettings | 'name' | 'role_id'>;

const ROLE_DEFAULTS: RoleOwnFields = {
  bind_secret_id: true,
  secret_id_bound_cidrs: [],
  secret_id_num_uses: 0,
  secret_id_ttl: 0,
  local_secret_ids: false,
};

export const ROLE_FIELDS: FieldMap = {
  role_id: { type: 'string', description: 'Custom role ID; default: a random UUID.' },
  bind_secret_id: { type: 'bool', description: 'Logins must present a secret ID (default true).' },
  secret_id_bound_cidrs: { type: 'comma-string-list', description: 'CIDR blocks logins with a secret ID of this role may come from.' },
  secret_id_num_uses: { type: 'int', description: 'Logins each secret ID allows; 0: unlimited.' },
  secret_id_ttl: { type: 'duration', description: 'Lifetime of secret IDs; 0: unlimited.' },
  local_secret_ids: { type: 'bool', description: 'Secret IDs are local to this cluster; set only when the role is created.' },
  ...TOKEN_FIELDS,
};

const ROLES = 'role/';
const ROLE_IDS = 'role-id/';

/** The roles of an approle mount, and the index from role ID to role name. */
export class Roles {
  constructor(private readonly storage: StorageView) {}

  get(name: string): Promise<Role | null> {
    return this.storage.getJSON<Role>(ROLES + name);
  }

  async require(name: string): Promise<Role> {
    const role = await this.get(name);
    if (!role) throw ServiceError.badRequest(`role "${name}" does not exist`);
    return role;
  }

  async names(): Promise<string[]> {
    return (await this.storage.list(ROLES)).filter((key) => !key.endsWith('/'));
  }

  async byRoleId(roleId: string): Promise<Role | null> {
    const index = roleId ? await this.storage.getJSON<{ name: string }>(ROLE_IDS + encodeURIComponent(roleId)) : null;
    const role = index && (await this.get(index.name));
    return role?.role_id === roleId ? role : null;
  }

  /** Stores a role; a new role ID must not belong to another role. */
  async put(role: Role, previousRoleId?: string): Promise<void> {
    await this.storage.transaction(async (tx) => {
      const index = ROLE_IDS + encodeURIComponent(role.role_id);
      await tx.lock(index);
      const holder = await tx.get(index);
      if (holder && (JSON.parse(holder.toString('utf8')) as { name: string }).name !== role.name) {
        throw ServiceError.badRequest('field "role_id": that role ID belongs to another role');
      }
      if (previousRoleId && previousRoleId !== role.role_id) await tx.delete(ROLE_IDS + encodeURIComponent(previousRoleId));
      await tx.put(index, Buffer.from(JSON.stringify({ name: role.name })));
      await tx.put(ROLES + role.name, Buffer.from(JSON.stringify(role)));
    });
  }

  async remove(role: Role): Promise<void> {
    await this.storage.transaction(async (tx) => {
      await tx.delete(ROLE_IDS + encodeURIComponent(role.role_id));
      await tx.delete(ROLES + role.name);
    });
  }
}

/**
 * A role as a write leaves it: fields sent replace the stored ones, the others stay (or take their
 * defaults on create). Checked as Vault checks a role.
 */
export function readRole(name: string, f: FieldData, existing: Role | null): Role {
  const own = { ...ROLE_DEFAULTS, ...pickOwn(existing) };
  for (const field of Object.keys(ROLE_DEFAULTS) as (keyof RoleOwnFields)[]) {
    if (f.sentDeclared(field)) (own as Record<string, unknown>)[field] = f.get(field);
  }
  if (existing && f.sentDeclared('local_secret_ids') && own.local_secret_ids !== existing.local_secret_ids) {
    throw ServiceError.badRequest('field "local_secret_ids" cannot be changed once the role exists');
  }
  if (own.secret_id_num_uses < 0) throw ServiceError.badRequest('field "secret_id_num_uses" cannot be negative');
  if (own.secret_id_ttl < 0) throw ServiceError.badRequest('field "secret_id_ttl" cannot be negative');
  own.secret_id_bound_cidrs = validateCidrs('secret_id_bound_cidrs', own.secret_id_bound_cidrs);
  const role: Role = {
    name,
    role_id: f.sentDeclared('role_id') ? f.get<string>('role_id').trim() : (existing?.role_id ?? randomUUID()),
    ...own,
    ...readTokenSettings(f, existing ?? DEFAULT_TOKEN_SETTINGS),
  };
  if (role.role_id === '') throw ServiceError.badRequest('field "role_id" cannot be empty');
  return constrained(role);
}

/** A role must bind logins somehow: a secret ID, or the addresses they come from. */
export function constrained(role: Role): Role {
  if (!role.bind_secret_id && role.secret_id_bound_cidrs.length === 0 && role.token_bound_cidrs.length === 0) {
    throw ServiceError.badRequest('at least one constraint must be enabled on the role: bind_secret_id, secret_id_bound_cidrs or token_bound_cidrs');
  }
  return role;
}

/** A role as reads show it (no role ID: that has its own path). */
export function roleData(role: Role): Record<string, unknown> {
  const { name: _name, role_id: _roleId, ...fields } = role;
  return tokenSettingsData(fields);
}

/** A field of a role back to its default (DELETE on the role's field paths). */
export function resetField(role: Role, field: string): Role {
  const defaults: Record<string, unknown> = { ...ROLE_DEFAULTS, ...DEFAULT_TOKEN_SETTINGS };
  return constrained({ ...role, [field]: defaults[field] });
}

function pickOwn(role: Role | null): Partial<RoleOwnFields> {
  if (!role) return {};
  const own: Partial<RoleOwnFields> = {};
  for (const field of Object.keys(ROLE_DEFAULTS) as (keyof RoleOwnFields)[]) (own as Record<string, unknown>)[field] = role[field];
  return own;
}
