/** roles/:name: what credentials a role issues, with which policies. */
import { listPath, type FieldData, type FieldMap, type PathDeclaration, type Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';
import type { CloudEngine } from '../engine';
import { CREDENTIAL_TYPES, ROLES, type CredentialType, type RoleRecord } from '../records';

export const ROLE_NAME: FieldMap = { name: { type: 'name', description: 'Name of the role.' } };

const ROLE_FIELDS: FieldMap = {
  ...ROLE_NAME,
  credential_type: { type: 'comma-string-list', description: `Credentials the role issues: ${CREDENTIAL_TYPES.join(', ')} (several, comma-separated). Required unless the legacy policy or arn is given.` },
  role_arns: { type: 'comma-string-list', description: 'ARNs of the roles to assume; required for assumed_role, refused otherwise.' },
  policy_arns: { type: 'comma-string-list', description: 'Managed policy ARNs: attached to IAM users, a filter of STS credentials.' },
  policy_document: { type: 'string', description: 'An IAM policy (JSON): attached to IAM users, a filter of STS credentials.' },
  iam_groups: { type: 'comma-string-list', description: "Groups IAM users join; for STS types the groups' policies join the filter." },
  iam_tags: { type: 'kv-pairs', description: 'Tags of created IAM users: ["key=value", ...] or a map.' },
  default_sts_ttl: { type: 'duration', description: 'TTL of STS credentials when the request names none (assumed_role, federation_token).' },
  max_sts_ttl: { type: 'duration', description: 'Longest TTL an STS credential may be asked for (assumed_role, federation_token).' },
  user_path: { type: 'string', description: 'Path of created IAM users (iam_user only); "/" by default.' },
  permissions_boundary_arn: { type: 'string', description: 'Permissions boundary of created IAM users (iam_user only).' },
  policy: { type: 'string', description: 'Legacy: an IAM policy (JSON) for IAM users. Cannot be mixed with the fields above.' },
  arn: { type: 'string', description: 'Legacy: a role ARN (assumed_role) or a managed policy ARN (iam_user). Cannot be mixed with the fields above.' },
};

const MODERN_FIELDS = ['credential_type', 'role_arns', 'policy_arns', 'policy_document', 'iam_groups', 'iam_tags', 'default_sts_ttl', 'max_sts_ttl', 'user_path', 'permissions_boundary_arn'];
const USER_PATH = /^\/([\x21-\x7E]+\/)?$/;
const POLICY_ARN = /^arn:[\w-]+:iam::(\d{12}|aws):policy\/.+$/;
const ROLE_ARN = /^arn:[\w-]+:iam::\d{12}:role\/.+$/;

const EMPTY_ROLE: RoleRecord = {
  credential_types: [],
  role_arns: [],
  policy_arns: [],
  policy_document: '',
  iam_groups: [],
  iam_tags: {},
  default_sts_ttl: 0,
  max_sts_ttl: 0,
  user_path: '',
  permissions_boundary_arn: '',
  legacy: false,
};

/** A policy document as stored: compact JSON. */
export function compactPolicy(field: string, document: string): string {
  if (document.trim() === '') return '';
  try {
    const parsed = JSON.parse(document) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
    return JSON.stringify(parsed);
  } catch {
    throw ServiceError.badRequest(`field "${field}": not a valid JSON policy document`);
  }
}

function legacyRole(fields: FieldData): RoleRecord {
  const policy = fields.has('policy') ? fields.get<string>('policy') : '';
  const arn = fields.has('arn') ? fields.get<string>('arn') : '';
  if (policy && arn) throw ServiceError.badRequest('fields "policy" and "arn": give one, not both');
  if (policy) return { ...EMPTY_ROLE, credential_types: ['iam_user'], policy_document: compactPolicy('policy', policy), legacy: true };
  if (ROLE_ARN.test(arn)) return { ...EMPTY_ROLE, credential_types: ['assumed_role'], role_arns: [arn], legacy: true };
  if (!POLICY_ARN.test(arn)) throw ServiceError.badRequest(`field "arn": "${arn}" is neither a role nor a policy ARN`);
  return { ...EMPTY_ROLE, credential_types: ['iam_user'], policy_arns: [arn], legacy: true };
}

/** The role a write describes: the stored one with the sent fields replaced, checked as a whole. */
function roleRecord(fields: FieldData, stored: RoleRecord | null): RoleRecord {
  const legacySent = fields.has('policy') || fields.has('arn');
  const modernSent = MODERN_FIELDS.filter((name) => fields.has(name));
  if (legacySent && modernSent.length > 0) {
    throw ServiceError.badRequest(`the legacy fields "policy" and "arn" cannot be mixed with ${modernSent.map((name) => `"${name}"`).join(', ')}`);
  }
  if (legacySent) return legacyRole(fields);
  const base = stored && !stored.legacy ? stored : EMPTY_ROLE;
  const value = <K extends keyof RoleRecord>(name: string, key: K): RoleRecord[K] => (fields.has(name) ? fields.get<RoleRecord[K]>(name) : base[key]);
  const role: RoleRecord = {
    credential_types: value('credential_type', 'credential_types'),
    role_arns: value('role_arns', 'role_arns'),
    policy_arns: value('policy_arns', 'policy_arns'),
    policy_document: fields.has('policy_document') ? compactPolicy('policy_document', fields.get('policy_document')) : base.policy_document,
    iam_groups: value('iam_groups', 'iam_groups'),
    iam_tags: value('iam_tags', 'iam_tags'),
    default_sts_ttl: value('default_sts_ttl', 'default_sts_ttl'),
    max_sts_ttl: value('max_sts_ttl', 'max_sts_ttl'),
    user_path: value('user_path', 'user_path'),
    permissions_boundary_arn: value('permissions_boundary_arn', 'permissions_boundary_arn'),
    legacy: false,
  };
  checkRole(role);
  return role;
}

function checkRole(role: RoleRecord): void {
  const types = new Set<string>(role.credential_types);
  if (types.size === 0) throw ServiceError.badRequest('missing required field "credential_type"');
  for (const type of types) {
    if (!(CREDENTIAL_TYPES as readonly string[]).includes(type)) throw ServiceError.badRequest(`field "credential_type": unknown credential type "${type}" (use ${CREDENTIAL_TYPES.join(', ')})`);
  }
  const has = (type: CredentialType) => types.has(type);
  const only = (name: string, allowed: CredentialType[]) => {
    if (!allowed.some(has)) throw ServiceError.badRequest(`field "${name}": only allowed with credential_type ${allowed.join(' or ')}`);
  };
  if (role.role_arns.length > 0) only('role_arns', ['assumed_role']);
  if (has('assumed_role') && role.role_arns.length === 0) throw ServiceError.badRequest('field "role_arns": required for credential_type assumed_role');
  for (const arn of role.role_arns) if (!ROLE_ARN.test(arn)) throw ServiceError.badRequest(`field "role_arns": "${arn}" is not a role ARN`);
  for (const arn of role.policy_arns) if (!POLICY_ARN.test(arn)) throw ServiceError.badRequest(`field "policy_arns": "${arn}" is not a policy ARN`);
  if ((has('iam_user') || has('federation_token')) && role.policy_arns.length === 0 && !role.policy_document) {
    throw ServiceError.badRequest('fields "policy_arns" and "policy_document": iam_user and federation_token need at least one of them');
  }
  if (role.default_sts_ttl > 0) only('default_sts_ttl', ['assumed_role', 'federation_token']);
  if (role.max_sts_ttl > 0) only('max_sts_ttl', ['assumed_role', 'federation_token']);
  if (role.max_sts_ttl > 0 && role.default_sts_ttl > role.max_sts_ttl) throw ServiceError.badRequest('field "default_sts_ttl": cannot be greater than max_sts_ttl');
  if (role.user_path) {
    only('user_path', ['iam_user']);
    if (role.user_path.length > 512 || !USER_PATH.test(role.user_path)) throw ServiceError.badRequest('field "user_path": must begin and end with "/", printable characters, 512 at most');
  }
  if (role.permissions_boundary_arn) {
    only('permissions_boundary_arn', ['iam_user']);
    if (!POLICY_ARN.test(role.permissions_boundary_arn)) throw ServiceError.badRequest(`field "permissions_boundary_arn": "${role.permissions_boundary_arn}" is not a policy ARN`);
  }
}

function describeRole(role: RoleRecord): Record<string, unknown> {
  return {
    credential_type: role.credential_types.join(','),
    credential_types: role.credential_types,
    role_arns: role.role_arns,
    policy_arns: role.policy_arns,
    policy_document: role.policy_document,
    iam_groups: role.iam_groups,
    iam_tags: role.iam_tags,
    default_sts_ttl: role.default_sts_ttl,
    max_sts_ttl: role.max_sts_ttl,
    user_path: role.user_path,
    permissions_boundary_arn: role.permissions_boundary_arn,
  };
}

export async function requireRole(storage: StorageView, name: string): Promise<RoleRecord> {
  const role = await ROLES.get(storage, name);
  if (!role) throw ServiceError.badRequest(`unknown role "${name}"`);
  return role;
}

export function rolePaths(engine: CloudEngine): PathDeclaration[] {
  const writeRole = async (_req: Request, fields: FieldData) => {
    await ROLES.put(engine.storage, fields.params.name, roleRecord(fields, await ROLES.get(engine.storage, fields.params.name)));
    return undefined;
  };
  return [
    listPath({ pattern: 'roles/', synopsis: 'Lists the roles.', summary: 'List the roles.', names: () => ROLES.list(engine.storage) }),
    {
      pattern: 'roles/:name',
      synopsis: 'Manages roles: which credentials they issue, with which policies.',
      fields: ROLE_FIELDS,
      existenceCheck: (_req, fields) => ROLES.has(engine.storage, fields.params.name),
      operations: {
        read: {
          summary: 'Read a role.',
          handler: async (_req, fields) => {
            const role = await ROLES.get(engine.storage, fields.params.name);
            if (!role) throw ServiceError.notFound(`role "${fields.params.name}" not found`);
            return { data: describeRole(role) };
          },
        },
        create: { summary: 'Create a role.', handler: writeRole },
        update: { summary: 'Update a role; fields not sent keep their values.', handler: writeRole },
        delete: {
          summary: 'Delete a role. Credentials it issued stay until their leases end.',
          handler: async (_req, fields) => {
            if (!(await ROLES.get(engine.storage, fields.params.name))) throw ServiceError.notFound(`role "${fields.params.name}" not found`);
            await ROLES.delete(engine.storage, fields.params.name);
            return undefined;
          },
        },
      },
    },
  ];
}
