/**
 * login: the iam flow (a signed sts:GetCallerIdentity the method forwards to STS, then the caller
 * bound to the role), as Vault's AWS auth method does it, with the renewal check of its tokens.
 */
import { callProvider } from '@svc/cloud-provider';
import { tokenAuth, renewedAuth, type AuthResponse, type FieldData, type FieldMap, type PathDeclaration, type Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { arnMatches, canonicalArn, parsePrincipal } from '../arn';
import type { CloudAuth } from '../method';
import type { ClientConfig, IdentityConfig, RoleRecord } from '../records';
import { checkInstanceBindings, describeInstance } from '../instances';
import { getCallerIdentity, type CallerIdentity } from '../sts-forward';
import { renewVmAuth, vmLogin } from './vm-login';

/** The header a server id is sent in (Vault: X-Vault-AWS-IAM-Server-ID). */
export const SERVER_ID_HEADER = 'x-service-cloud-iam-server-id';

/** Headers a signed GetCallerIdentity may carry (Vault's list), beside the server id and allowed_sts_header_values. */
const ALLOWED_HEADERS = new Set([
  'authorization',
  'content-length',
  'content-type',
  'host',
  'user-agent',
  'x-amz-content-sha256',
  'x-amz-date',
  'x-amz-security-token',
  'x-amz-user-agent',
  SERVER_ID_HEADER,
]);

const IAM_FIELDS = ['iam_http_request_method', 'iam_request_url', 'iam_request_body', 'iam_request_headers'] as const;
const VM_FIELDS = ['identity', 'signature', 'pkcs7', 'nonce'] as const;

export const LOGIN_FIELDS: FieldMap = {
  role: { type: 'string', default: '', description: 'Role to log in to; default: iam: the caller\'s friendly name; vm: the image id.' },
  iam_http_request_method: { type: 'string', description: 'HTTP method of the signed request (POST).' },
  iam_request_url: { type: 'string', description: 'Base64 URL of the signed request (no query).' },
  iam_request_body: { type: 'string', sensitive: true, description: 'Base64 body of the signed request: Action=GetCallerIdentity&Version=2011-06-15.' },
  iam_request_headers: { type: 'header', sensitive: true, description: 'Headers of the signed request: an object, or base64 of its JSON.' },
  identity: { type: 'string', description: 'Base64 instance identity document (vm, with signature).' },
  signature: { type: 'string', description: 'Base64 RSA-SHA256 signature of the identity document (vm).' },
  pkcs7: { type: 'string', description: 'PKCS#7 signature of the identity document, without PEM armour (vm).' },
  nonce: { type: 'string', sensitive: true, description: 'Nonce of the instance\'s logins (vm).' },
};

function decodeBase64(name: string, value: string): string {
  const decoded = Buffer.from(value, 'base64');
  if (value.trim() === '' || decoded.toString('base64').replace(/=+$/, '') !== value.trim().replace(/=+$/, '')) throw ServiceError.badRequest(`field "${name}": not base64`);
  return decoded.toString('utf8');
}

/** Header names lower-cased, for the checks; values as sent. */
function lowerCased(headers: Record<string, string[]>): Record<string, string[]> {
  return Object.fromEntries(Object.entries(headers).map(([name, values]) => [name.toLowerCase(), values]));
}

/** Credential scope of a SigV4 Authorization header: region and signed header names. */
function authorization(headers: Record<string, string[]>): { region: string; signedHeaders: string[] } {
  const value = headers.authorization?.[0] ?? '';
  const credential = /Credential=([^,\s]+)/.exec(value)?.[1]?.split('/');
  const signed = /SignedHeaders=([^,\s]+)/.exec(value)?.[1]?.split(';');
  if (!credential || credential.length !== 5 || !signed) throw ServiceError.badRequest('field "iam_request_headers": no SigV4 Authorization header');
  return { region: credential[2], signedHeaders: signed };
}

/** The endpoint the client's region is served at: the SDK's endpoint variables, then the provider's regional endpoint. */
function regionalStsEndpoint(region: string, env: NodeJS.ProcessEnv = process.env): string {
  return env.AWS_ENDPOINT_URL_STS || env.AWS_ENDPOINT_URL || `https://sts.${region}.amazonaws.com`;
}

interface IamRequest {
  url: URL;
  body: string;
  headers: Record<string, string[]>;
}

/** The login's request must be exactly an sts:GetCallerIdentity, carrying only the headers allowed. */
export function checkIamRequest(f: FieldData, config: ClientConfig | null): IamRequest {
  const method = f.get<string>('iam_http_request_method');
  if (method !== 'POST') throw ServiceError.badRequest(`field "iam_http_request_method": must be POST, not "${method}"`);
  const urlText = decodeBase64('iam_request_url', f.get('iam_request_url'));
  if (!URL.canParse(urlText)) throw ServiceError.badRequest('field "iam_request_url": not a URL');
  const url = new URL(urlText);
  if (url.search !== '' || (url.pathname !== '/' && url.pathname !== '')) throw ServiceError.badRequest('field "iam_request_url": must be the STS endpoint\'s root, without a query');
  const body = decodeBase64('iam_request_body', f.get('iam_request_body'));
  const params = new URLSearchParams(body);
  const keys = [...params.keys()].sort();
  if (params.get('Action') !== 'GetCallerIdentity' || params.get('Version') !== '2011-06-15' || keys.join(',') !== 'Action,Version') {
    throw ServiceError.badRequest('field "iam_request_body": must be exactly Action=GetCallerIdentity&Version=2011-06-15');
  }
  const headers = lowerCased(f.get('iam_request_headers'));
  const allowed = new Set([...ALLOWED_HEADERS, ...(config?.allowed_sts_header_values ?? []).map((name) => name.toLowerCase())]);
  const refused = Object.keys(headers).filter((name) => !allowed.has(name));
  if (refused.length) throw ServiceError.badRequest(`field "iam_request_headers": header(s) not allowed: ${refused.join(', ')}`);
  const { signedHeaders } = authorization(headers);
  const expected = config?.iam_server_id_header_value;
  if (expected) {
    const given = headers[SERVER_ID_HEADER];
    if (!given?.length) throw ServiceError.badRequest('missing header "X-Service-Cloud-IAM-Server-ID"');
    if (given.length !== 1 || given[0] !== expected) throw ServiceError.badRequest(`header "X-Service-Cloud-IAM-Server-ID": expected "${expected}", got "${given.join(',')}"`);
    if (!signedHeaders.includes(SERVER_ID_HEADER)) throw ServiceError.badRequest('header "X-Service-Cloud-IAM-Server-ID" is not among the signed headers');
  }
  return { url, body, headers };
}

function stsEndpoint(config: ClientConfig | null, headers: Record<string, string[]>): URL {
  if (config?.use_sts_region_from_client) return new URL(regionalStsEndpoint(authorization(headers).region));
  return new URL(config?.sts_endpoint || 'https://sts.amazonaws.com');
}

/** What a login keeps on the token for its renewals (never shown to clients). */
interface IamLoginData {
  role_name: string;
  role_id: string;
  auth_type: 'iam';
  canonical_arn: string;
  client_arn: string;
  client_user_id: string;
  account_id: string;
  inferred_entity_type: string;
  [key: string]: unknown;
}

/** The principal's full ARN, path included, for trailing-wildcard bindings: an assumed role's is its role's, read from IAM. */
async function fullArn(method: CloudAuth, clientArn: string): Promise<string> {
  const principal = parsePrincipal(clientArn);
  if (principal.type !== 'assumed-role') return clientArn;
  const { iam, IAM, secrets } = await method.clients();
  const role = await callProvider(`read role "${principal.friendlyName}"`, secrets, () => iam.send(new IAM.GetRoleCommand({ RoleName: principal.friendlyName })));
  return role.Role?.Arn ?? canonicalArn(principal);
}

/** Vault's bound_iam_principal_arn check: resolved unique ids, else the canonical ARN; wildcards against the full ARN. */
async function principalBound(method: CloudAuth, role: RoleRecord, data: IamLoginData): Promise<boolean> {
  if (!role.bound_iam_principal_arn.length) return true;
  const uniqueId = data.client_user_id.split(':')[0];
  if (role.resolve_cloud_unique_ids ? role.bound_iam_principal_id.includes(uniqueId) : role.bound_iam_principal_arn.includes(data.canonical_arn)) return true;
  const wildcards = role.bound_iam_principal_arn.filter((arn) => arn.endsWith('*'));
  if (!wildcards.length) return false;
  const full = await fullArn(method, data.client_arn);
  return wildcards.some((pattern) => arnMatches(pattern, full));
}

export function loginPath(method: CloudAuth): PathDeclaration {
  async function iamLogin(f: FieldData): Promise<AuthResponse> {
    const config = await method.clientConfig();
    const signed = checkIamRequest(f, config);
    const attempts = config && config.max_retries >= 0 ? config.max_retries + 1 : 3;
    const identity = await getCallerIdentity(stsEndpoint(config, signed.headers), { body: signed.body, headers: signed.headers, host: signed.url.host }, attempts);
    const principal = parsePrincipal(identity.arn);
    const roleName = (f.get<string>('role') || principal.friendlyName).toLowerCase();
    const role = await method.role(roleName);
    if (!role) throw ServiceError.badRequest(`entry for role "${roleName}" not found`);
    if (role.auth_type !== 'iam') throw ServiceError.badRequest(`auth method iam not allowed for role "${roleName}"`);
    const data: IamLoginData = {
      role_name: roleName,
      role_id: role.role_id,
      auth_type: 'iam',
      canonical_arn: canonicalArn(principal),
      client_arn: identity.arn,
      client_user_id: identity.userId,
      account_id: identity.account,
      inferred_entity_type: role.inferred_entity_type,
    };
    if (!(await principalBound(method, role, data))) throw ServiceError.forbidden(`IAM principal "${identity.arn}" does not belong to the role "${roleName}"`);
    const inferred = role.inferred_entity_type ? await inferredInstance(method, role, identity.account, principal) : {};
    Object.assign(data, inferred);
    const identityConfig = await method.identityConfig();
    const metadata: Record<string, string> = { client_arn: identity.arn, canonical_arn: data.canonical_arn, client_user_id: identity.userId, auth_type: 'iam', account_id: identity.account, role_id: role.role_id, ...inferred };
    return tokenAuth(role, {
      displayName: principal.type === 'assumed-role' ? `${principal.friendlyName}/${principal.session}` : principal.friendlyName,
      metadata,
      alias: { name: iamAliasName(identityConfig, role, identity), metadata: pick(metadata, identityConfig.iam_metadata) },
      internalData: data,
    });
  }

  async function login(_req: Request, f: FieldData): Promise<AuthResponse> {
    const iam = IAM_FIELDS.filter((name) => f.has(name));
    const vm = VM_FIELDS.filter((name) => name !== 'nonce' && f.has(name));
    if (iam.length && vm.length) throw ServiceError.badRequest(`supplied auth values for both iam (${iam.join(', ')}) and vm (${vm.join(', ')}) login`);
    if (iam.length) {
      const missing = IAM_FIELDS.filter((name) => !f.has(name));
      if (missing.length) throw ServiceError.badRequest(`some of the iam auth values are missing: ${missing.map((name) => `"${name}"`).join(', ')}`);
      return iamLogin(f);
    }
    if (f.has('pkcs7') && (f.has('identity') || f.has('signature'))) throw ServiceError.badRequest('supply either "pkcs7" or "identity" with "signature", not both');
    if (f.has('pkcs7')) return vmLogin(method, f);
    if (f.has('identity') && f.has('signature')) return vmLogin(method, f);
    if (vm.length) throw ServiceError.badRequest(`some of the vm auth values are missing: "${f.has('identity') ? 'signature' : 'identity'}"`);
    throw ServiceError.badRequest(`didn't supply required authentication values: ${IAM_FIELDS.join(', ')} (iam), or pkcs7, or identity and signature (vm)`);
  }

  return {
    pattern: 'login',
    synopsis: 'Logs in with a signed sts:GetCallerIdentity request (iam), or a signed instance identity document (vm).',
    fields: LOGIN_FIELDS,
    operations: { update: { summary: 'Log in.', unauthenticated: true, handler: async (req, f) => ({ auth: await login(req, f) }) } },
  };
}

/**
 * The instance an iam login infers (`inferred_entity_type` vm_instance): an assumed role's session
 * named after the instance id, looked up in `inferred_cloud_region` and held to the instance bindings.
 */
async function inferredInstance(method: CloudAuth, role: RoleRecord, account: string, principal: ReturnType<typeof parsePrincipal>): Promise<Record<string, string>> {
  if (principal.type !== 'assumed-role') throw ServiceError.badRequest(`role infers a vm_instance, but the caller is a ${principal.type}, not an instance's assumed role`);
  const instance = await describeInstance(method, principal.session, account, role.inferred_cloud_region);
  await checkInstanceBindings(method, role, instance);
  return { inferred_entity_type: role.inferred_entity_type, inferred_entity_id: instance.instanceId, inferred_cloud_region: role.inferred_cloud_region };
}

/** The alias name per config/identity `iam_alias`. */
function iamAliasName(config: IdentityConfig, role: RoleRecord, identity: CallerIdentity): string {
  if (config.iam_alias === 'unique_id') return identity.userId;
  if (config.iam_alias === 'full_arn') return identity.arn;
  return role.role_id;
}

function pick(values: Record<string, string>, names: readonly string[]): Record<string, string> {
  return Object.fromEntries(names.filter((name) => values[name] !== undefined).map((name) => [name, values[name]]));
}

/**
 * A renewal re-checks the login (Vault's pathLoginRenew): for iam, the role still exists with the
 * same auth type and inference setting, and still binds the principal (and inferred instance); the
 * token takes the role's settings now. vm logins: renewVmAuth.
 */
export async function renewCloudAuth(method: CloudAuth, auth: AuthResponse): Promise<AuthResponse> {
  const data = auth.internalData as IamLoginData | undefined;
  if (!data?.role_name) throw ServiceError.badRequest('the token holds no login to renew');
  if ((data.auth_type as string) === 'vm') return renewVmAuth(method, auth);
  const role = await method.role(data.role_name);
  if (!role) throw ServiceError.badRequest(`role "${data.role_name}" no longer exists; the token cannot be renewed`);
  if (role.auth_type !== data.auth_type) throw ServiceError.badRequest(`role "${data.role_name}" no longer accepts ${data.auth_type} logins`);
  if (role.inferred_entity_type !== data.inferred_entity_type) throw ServiceError.badRequest(`the inferred_entity_type of role "${data.role_name}" changed; the token cannot be renewed`);
  const bound = await principalBound(method, role, data);
  if (!bound) throw ServiceError.forbidden(`role "${data.role_name}" no longer binds "${data.client_arn}"; the token cannot be renewed`);
  if (role.inferred_entity_type) await checkInstanceBindings(method, role, await describeInstance(method, String(data.inferred_entity_id), data.account_id, role.inferred_cloud_region));
  return renewedAuth(role, auth);
}
