/** role/:role (create, read, update, delete) and the role lists. */
import { randomBytes, randomUUID } from 'node:crypto';
import { callProvider } from '@svc/cloud-provider';
import {
  DEFAULT_TOKEN_SETTINGS,
  recordPaths,
  readTokenSettings,
  TOKEN_FIELDS,
  tokenSettingsData,
  type FieldData,
  type FieldMap,
  type PathDeclaration,
} from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { parsePrincipal } from '../arn';
import type { CloudAuth } from '../method';
import { AUTH_TYPES, ROLES, type RoleRecord } from '../records';

/** Bindings on the instance: checked by vm logins, and by iam logins that infer an instance. */
export const INSTANCE_BINDINGS = [
  'bound_image_id',
  'bound_account_id',
  'bound_region',
  'bound_vpc_id',
  'bound_subnet_id',
  'bound_iam_role_arn',
  'bound_iam_instance_profile_arn',
  'bound_vm_instance_id',
] as const;

const LIST = (description: string) => ({ type: 'comma-string-list' as const, description });

export const ROLE_FIELDS: FieldMap = {
  role: { type: 'string', description: 'Name of the role (lower-cased).' },
  auth_type: { type: 'string', allowed: AUTH_TYPES, description: 'iam (default) or vm: the login the role accepts.' },
  bound_image_id: LIST('Image ids an instance must run.'),
  bound_account_id: LIST('Account ids an instance must belong to.'),
  bound_region: LIST('Regions an instance must run in.'),
  bound_vpc_id: LIST('VPC ids an instance must be in.'),
  bound_subnet_id: LIST('Subnet ids an instance must be in.'),
  bound_iam_role_arn: LIST('Role ARNs of the instance profile an instance must have (trailing * allowed).'),
  bound_iam_instance_profile_arn: LIST('Instance profile ARNs an instance must have (trailing * allowed).'),
  bound_vm_instance_id: LIST('Instance ids allowed to log in.'),
  role_tag: { type: 'string', description: 'Key of the instance tag holding a role tag (vm only).' },
  bound_iam_principal_arn: LIST('Principal ARNs allowed to log in by iam (trailing * allowed).'),
  inferred_entity_type: { type: 'string', allowed: ['', 'vm_instance'], description: 'vm_instance: an iam login must come from an instance, whose bindings are checked (iam only).' },
  inferred_cloud_region: { type: 'string', description: 'Region of the inferred instance (required with inferred_entity_type).' },
  resolve_cloud_unique_ids: { type: 'bool', description: 'Bind bound_iam_principal_arn by the unique ids it resolves to now (default true; cannot be turned off).' },
  allow_instance_migration: { type: 'bool', description: 'A re-login with a new nonce is accepted from an instance started later (vm only).' },
  disallow_reauthentication: { type: 'bool', description: 'One login per instance until its access-list entry is removed (vm only).' },
  ...TOKEN_FIELDS,
};

type OwnFields = Omit<RoleRecord, keyof typeof DEFAULT_TOKEN_SETTINGS | 'role_id' | 'bound_iam_principal_id' | 'hmac_key'>;

const OWN_DEFAULTS: OwnFields = {
  auth_type: 'iam',
  bound_image_id: [],
  bound_account_id: [],
  bound_region: [],
  bound_vpc_id: [],
  bound_subnet_id: [],
  bound_iam_role_arn: [],
  bound_iam_instance_profile_arn: [],
  bound_vm_instance_id: [],
  bound_iam_principal_arn: [],
  role_tag: '',
  inferred_entity_type: '',
  inferred_cloud_region: '',
  resolve_cloud_unique_ids: true,
  allow_instance_migration: false,
  disallow_reauthentication: false,
};

/** The fields of a role a read shows (Vault's role read: every binding, the resolved ids, the token fields). */
export function roleData(role: RoleRecord): Record<string, unknown> {
  const { hmac_key: _key, ...shown } = tokenSettingsData(role);
  return shown;
}

function roleName(f: FieldData): string {
  return f.params.role.toLowerCase();
}

/** Document 2's role rules: bindings only where the role's type checks them, at least one, and the pairwise rules. */
export function checkRole(role: RoleRecord): void {
  const refuse = (message: string) => {
    throw ServiceError.badRequest(message);
  };
  const inferring = role.inferred_entity_type !== '';
  if (role.auth_type === 'vm') {
    if (role.bound_iam_principal_arn.length) refuse('field "bound_iam_principal_arn": only for auth_type iam');
    if (inferring) refuse('field "inferred_entity_type": only for auth_type iam');
    if (role.allow_instance_migration && role.disallow_reauthentication) refuse('fields "allow_instance_migration" and "disallow_reauthentication" cannot both be true');
  } else {
    if (role.role_tag) refuse('field "role_tag": only for auth_type vm');
    if (role.allow_instance_migration) refuse('field "allow_instance_migration": only for auth_type vm');
    if (role.disallow_reauthentication) refuse('field "disallow_reauthentication": only for auth_type vm');
    if (!inferring) {
      const instanceBinding = INSTANCE_BINDINGS.find((name) => role[name].length > 0);
      if (instanceBinding) refuse(`field "${instanceBinding}": only for auth_type vm, or iam with inferred_entity_type`);
    }
    if (inferring && !role.inferred_cloud_region) refuse('field "inferred_cloud_region": required with inferred_entity_type');
  }
  if (role.inferred_cloud_region && !inferring) refuse('field "inferred_cloud_region": only with inferred_entity_type');
  const bindings = [...INSTANCE_BINDINGS, 'bound_iam_principal_arn' as const].filter((name) => role[name].length > 0);
  if (bindings.length === 0 && !(role.auth_type === 'iam' && inferring)) refuse('at least one bound parameter must be set on the role');
  for (const arn of role.bound_iam_principal_arn) {
    if (!arn.startsWith('arn:')) refuse(`field "bound_iam_principal_arn": "${arn}" is not an ARN`);
    // Without resolving, the role's canonical ARN (no path) is what a login is compared with.
    if (!arn.endsWith('*') && !role.resolve_cloud_unique_ids && parsePrincipal(arn).path !== '/' && arn.includes(':role/')) {
      refuse(`field "bound_iam_principal_arn": "${arn}": without resolve_cloud_unique_ids, role ARNs must omit the path`);
    }
  }
}

export function rolePaths(method: CloudAuth): PathDeclaration[] {
  const { storage } = method;

  /** The unique id of each principal ARN bound without a wildcard (GetUser / GetRole by name). */
  async function resolveUniqueIds(arns: string[]): Promise<string[]> {
    const exact = arns.filter((arn) => !arn.endsWith('*'));
    if (!exact.length) return [];
    const { iam, IAM, secrets } = await method.clients();
    return Promise.all(
      exact.map(async (arn) => {
        const principal = parsePrincipal(arn);
        const action = `resolve the unique id of "${arn}"`;
        if (principal.type === 'user') return (await callProvider(action, secrets, () => iam.send(new IAM.GetUserCommand({ UserName: principal.friendlyName })))).User?.UserId ?? '';
        if (principal.type === 'role') return (await callProvider(action, secrets, () => iam.send(new IAM.GetRoleCommand({ RoleName: principal.friendlyName })))).Role?.RoleId ?? '';
        throw ServiceError.badRequest(`field "bound_iam_principal_arn": "${arn}" is neither a user nor a role`);
      }),
    );
  }

  async function writeRole(f: FieldData, existing: RoleRecord | null): Promise<undefined> {
    const base: RoleRecord = existing ?? { ...DEFAULT_TOKEN_SETTINGS, ...OWN_DEFAULTS, role_id: randomUUID(), bound_iam_principal_id: [], hmac_key: randomBytes(32).toString('base64') };
    const own = Object.fromEntries(Object.keys(OWN_DEFAULTS).map((name) => [name, f.has(name) ? f.get(name) : base[name as keyof OwnFields]])) as OwnFields;
    if (existing && own.auth_type !== existing.auth_type) throw ServiceError.badRequest(`field "auth_type": cannot change from "${existing.auth_type}" to "${own.auth_type}"`);
    if (existing?.resolve_cloud_unique_ids && !own.resolve_cloud_unique_ids) throw ServiceError.badRequest('field "resolve_cloud_unique_ids": cannot be changed from true to false');
    const role: RoleRecord = { ...base, ...readTokenSettings(f, base), ...own };
    checkRole(role);
    const arnsChanged = !existing || f.has('bound_iam_principal_arn') || f.has('resolve_cloud_unique_ids');
    if (arnsChanged) role.bound_iam_principal_id = role.resolve_cloud_unique_ids ? await resolveUniqueIds(role.bound_iam_principal_arn) : [];
    await ROLES.put(storage, roleName(f), role);
    return undefined;
  }

  return recordPaths<RoleRecord>({
    collection: 'role',
    param: 'role',
    listAliases: ['roles/'],
    synopsis: 'Creates, reads, updates or deletes a login role.',
    fields: ROLE_FIELDS,
    name: roleName,
    get: (name) => method.role(name),
    names: () => ROLES.list(storage),
    remove: (name) => ROLES.delete(storage, name),
    shown: roleData,
    write: writeRole,
  });
}

