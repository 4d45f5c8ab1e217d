/**
 * creds/:name and sts/:name: credentials of a role. IAM users are created under a renewable lease
 * and deleted when it ends; STS credentials (assumed role, federation token) lease until the
 * provider's expiry, cannot be renewed, and end by themselves.
 */
import type { Credentials } from '@aws-sdk/client-sts';
import type { FieldData, FieldMap, PathDeclaration, Request, Response, SecretType } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { normalizeName, type CloudEngine } from '../engine';
import { createIamUser, deleteIamUser, WAL_ROLLBACK_MIN_AGE_MS } from '../iam-users';
import { callProvider, providerError, type ProviderClients } from '@svc/cloud-provider';
import { LEASE_CONFIG, type CredentialType, type RoleRecord } from '../records';
import { requireRole, ROLE_NAME } from './role-paths';

export const SECRET_TYPE = 'access_keys';

const DEFAULT_STS_TTL = 3600;
const SESSION_NAME_LIMIT = 64;

const CREDS_FIELDS: FieldMap = {
  ...ROLE_NAME,
  role_arn: { type: 'string', description: "For assumed_role: which of the role's role_arns to assume; optional when it has one." },
  role_session_name: { type: 'string', description: 'For assumed_role: the session name (other characters than [a-zA-Z0-9+=,.@_-] become "_", 64 at most); generated when absent.' },
  ttl: { type: 'duration', description: "For STS types: how long the credentials last; default the role's default_sts_ttl, then 3600s." },
};

type CredsPath = 'creds' | 'sts';

/** Which credential type a request gets from a role that may issue several. */
function credentialType(role: RoleRecord, path: CredsPath, name: string, fields: FieldData): CredentialType {
  const types = role.credential_types;
  if (role.legacy) {
    const wanted = path === 'creds' ? types.includes('iam_user') : !types.includes('iam_user');
    if (!wanted) throw ServiceError.badRequest(`role "${name}" was written with the legacy policy or arn: ${path === 'creds' ? 'use sts/ for its STS credentials' : 'use creds/ for its IAM users'}`);
    return types[0];
  }
  if (types.length === 1) return types[0];
  if (fields.has('role_arn') && types.includes('assumed_role')) return 'assumed_role';
  const preferred: CredentialType[] = path === 'creds' ? ['iam_user', 'federation_token', 'assumed_role'] : ['federation_token', 'assumed_role', 'iam_user'];
  return preferred.find((type) => types.includes(type))!;
}

function stsTtl(role: RoleRecord, fields: FieldData): number {
  const requested = fields.has('ttl') ? fields.get<number>('ttl') : 0;
  const ttl = requested || role.default_sts_ttl || DEFAULT_STS_TTL;
  if (role.max_sts_ttl > 0 && ttl > role.max_sts_ttl) throw ServiceError.badRequest(`field "ttl": ${ttl}s is above the role's max_sts_ttl of ${role.max_sts_ttl}s`);
  return ttl;
}

/** The role's policy document and ARNs plus those of its groups: the filter of STS credentials. */
async function sessionPolicies({ iam, IAM }: ProviderClients, role: RoleRecord): Promise<{ Policy?: string; PolicyArns?: Array<{ arn: string }> }> {
  const documents = role.policy_document ? [role.policy_document] : [];
  const arns = new Set(role.policy_arns);
  for (const group of role.iam_groups) {
    const attached = await iam.send(new IAM.ListAttachedGroupPoliciesCommand({ GroupName: group }));
    for (const policy of attached.AttachedPolicies ?? []) if (policy.PolicyArn) arns.add(policy.PolicyArn);
    const inline = await iam.send(new IAM.ListGroupPoliciesCommand({ GroupName: group }));
    for (const policyName of inline.PolicyNames ?? []) {
      const { PolicyDocument: document } = await iam.send(new IAM.GetGroupPolicyCommand({ GroupName: group, PolicyName: policyName }));
      // IAM answers policy documents URL-encoded.
      if (document) documents.push(decodeURIComponent(document));
    }
  }
  let policy: string | undefined;
  if (documents.length === 1) policy = documents[0];
  if (documents.length > 1) {
    const statements = documents.flatMap((document) => {
      const statement = (JSON.parse(document) as { Statement?: unknown }).Statement;
      return Array.isArray(statement) ? statement : statement === undefined ? [] : [statement];
    });
    policy = JSON.stringify({ Version: '2012-10-17', Statement: statements });
  }
  return { Policy: policy, PolicyArns: arns.size > 0 ? [...arns].map((arn) => ({ arn })) : undefined };
}

function stsResponse(credentials: Credentials | undefined, arn: string | undefined): Response {
  if (!credentials?.AccessKeyId || !credentials.SecretAccessKey || !credentials.Expiration) throw ServiceError.badGateway('the provider returned no credentials');
  return {
    data: { access_key: credentials.AccessKeyId, secret_key: credentials.SecretAccessKey, security_token: credentials.SessionToken ?? null, arn: arn ?? '' },
    secret: {
      type: SECRET_TYPE,
      internalData: { is_sts: true },
      // The provider states expiry in whole seconds: rounding up gives a 1200s request a 1200s lease.
      ttl: Math.max(1, Math.ceil((credentials.Expiration.getTime() - Date.now()) / 1000)),
      renewable: false,
    },
  };
}

function roleArn(role: RoleRecord, fields: FieldData): string {
  if (!fields.has('role_arn') || fields.get('role_arn') === '') {
    if (role.role_arns.length !== 1) throw ServiceError.badRequest('field "role_arn": required, since the role has several role_arns');
    return role.role_arns[0];
  }
  const arn = fields.get<string>('role_arn');
  if (!role.role_arns.includes(arn)) throw ServiceError.badRequest(`field "role_arn": "${arn}" is not one of the role's role_arns`);
  return arn;
}

async function issue(engine: CloudEngine, req: Request, fields: FieldData, path: CredsPath): Promise<Response> {
  const name = fields.params.name;
  const role = await requireRole(engine.storage, name);
  const type = credentialType(role, path, name, fields);
  const clients = await engine.clients();
  const { sts, STS, secrets } = clients;
  switch (type) {
    case 'iam_user': {
      const username = await engine.generateName(req, 'IAM', name);
      const user = await createIamUser(clients, engine.storage, engine.context.logger, username, name, role);
      const lease = await LEASE_CONFIG.get(engine.storage, 'lease');
      return {
        data: { access_key: user.accessKeyId, secret_key: user.secretAccessKey, security_token: null, arn: user.arn },
        secret: { type: SECRET_TYPE, internalData: { username, policy: name, is_sts: false, issued_at: Date.now() }, ttl: lease?.lease ?? 0, maxTtl: lease?.lease_max ?? 0, renewable: true },
      };
    }
    case 'assumed_role': {
      const arn = roleArn(role, fields);
      const ttl = stsTtl(role, fields);
      const given = fields.has('role_session_name') ? fields.get<string>('role_session_name') : '';
      const sessionName = given ? normalizeName(given).slice(0, SESSION_NAME_LIMIT) : await engine.generateName(req, 'STS', name);
      const assumed = await callProvider('assume role', secrets, async () =>
        sts.send(new STS.AssumeRoleCommand({ RoleArn: arn, RoleSessionName: sessionName, DurationSeconds: ttl, ...(await sessionPolicies(clients, role)) })),
      );
      return stsResponse(assumed.Credentials, assumed.AssumedRoleUser?.Arn);
    }
    case 'federation_token': {
      const ttl = stsTtl(role, fields);
      const federatedName = await engine.generateName(req, 'STS', name);
      const token = await callProvider('get federation token', secrets, async () =>
        sts.send(new STS.GetFederationTokenCommand({ Name: federatedName, DurationSeconds: ttl, ...(await sessionPolicies(clients, role)) })),
      );
      return stsResponse(token.Credentials, token.FederatedUser?.Arn);
    }
  }
}

export function credsPaths(engine: CloudEngine): PathDeclaration[] {
  const paths: Array<{ path: CredsPath; synopsis: string }> = [
    { path: 'creds', synopsis: "Issues credentials of a role (an IAM user under a lease, unless the role issues only STS credentials)." },
    { path: 'sts', synopsis: "Issues STS credentials of a role (federation token or assumed role), or an IAM user for a role that issues only those." },
  ];
  return paths.map(({ path, synopsis }) => ({
    pattern: `${path}/:name`,
    synopsis,
    fields: CREDS_FIELDS,
    operations: {
      read: { summary: 'Generate credentials.', handler: (req, fields) => issue(engine, req, fields, path) },
      update: { summary: 'Generate credentials, with parameters in the body.', handler: (req, fields) => issue(engine, req, fields, path) },
    },
  }));
}

interface UserLease {
  username: string;
  issued_at: number;
}

function userLease(internalData: Record<string, unknown>): UserLease | undefined {
  if (internalData.is_sts === true) return undefined;
  const { username, issued_at: issuedAt } = internalData;
  if (typeof username !== 'string' || typeof issuedAt !== 'number') throw ServiceError.badRequest('lease data of a cloud credential is incomplete');
  return { username, issued_at: issuedAt };
}

/**
 * The lease of issued credentials. An IAM user's renews by the configured lease (or the requested
 * increment) and its end deletes the user with everything attached; STS credentials end by themselves.
 */
export function accessKeysSecret(engine: CloudEngine): SecretType {
  return {
    description: 'Access keys of an IAM user the engine created, or STS credentials.',
    renew: async (req, internalData) => {
      if (!userLease(internalData)) throw ServiceError.badRequest('STS credentials cannot be renewed');
      const lease = await LEASE_CONFIG.get(engine.storage, 'lease');
      const increment = typeof req.data.increment === 'number' && req.data.increment > 0 ? req.data.increment : (lease?.lease ?? 0);
      return { secret: { type: SECRET_TYPE, internalData, ttl: increment, maxTtl: lease?.lease_max ?? 0, renewable: true } };
    },
    revoke: async (_req, internalData) => {
      const lease = userLease(internalData);
      if (!lease) return;
      const clients = await engine.clients();
      let existed: boolean;
      try {
        existed = await deleteIamUser(clients, lease.username);
      } catch (err) {
        throw providerError(`delete user ${lease.username}`, err, clients.secrets);
      }
      // IAM is eventually consistent: a user just created may not be visible yet, so a young lease retries.
      if (!existed && Date.now() - lease.issued_at < WAL_ROLLBACK_MIN_AGE_MS) {
        throw ServiceError.badGateway(`user ${lease.username} is not visible at the provider yet; the revocation will be retried`);
      }
    },
  };
}
