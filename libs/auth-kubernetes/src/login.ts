/** `login` (a service account's JWT for a token of a role) and the renewal of the tokens it issues. */
import { addressAllowed, renewedAuth, tokenAuth, type AuthResponse, type FieldData, type PathDeclaration, type Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';
import { KubernetesApi, type ReviewedAccount } from './api-server';
import { readStoredConfig, type KubernetesConfig } from './config';
import { aliasName, bindingProblem, ROLES, type KubernetesRole, type ServiceAccount } from './roles';
import { checkClaims, claimedAccount, LEGACY_ISSUER, parseJwt, publicKeyOf, signedByOneOf, type ParsedJwt } from './service-account-jwt';

export interface LoginSettings {
  storage: StorageView;
  /** Deadline of each exchange with the Kubernetes API server. */
  apiDeadlineMs: number;
}

/** The account's metadata, on the token and on its alias (the annotations' keys may not take these). */
const ACCOUNT_METADATA_KEYS = ['service_account_uid', 'service_account_name', 'service_account_namespace', 'service_account_secret_name'] as const;

function accountMetadata(account: ServiceAccount): Record<(typeof ACCOUNT_METADATA_KEYS)[number], string> {
  return {
    service_account_uid: account.uid,
    service_account_name: account.name,
    service_account_namespace: account.namespace,
    service_account_secret_name: account.secretName,
  };
}

async function requireConfig(storage: StorageView): Promise<KubernetesConfig> {
  const config = await readStoredConfig(storage);
  if (!config) throw ServiceError.badRequest('the kubernetes auth method is not configured yet (write its config first)');
  return config;
}

/** The account a JWT belongs to: verified here against pem_keys when there are any, otherwise by Kubernetes. */
async function vouchedAccount(jwt: ParsedJwt, role: KubernetesRole, config: KubernetesConfig, api: KubernetesApi): Promise<ServiceAccount> {
  const claimed = claimedAccount(jwt.claims);
  if (config.pem_keys.length > 0) {
    if (!signedByOneOf(jwt, config.pem_keys.map(publicKeyOf))) throw ServiceError.forbidden('permission denied: the JWT\'s signature does not verify with the configured pem_keys');
    if (!claimed) throw ServiceError.forbidden('permission denied: the JWT names no service account');
    return claimed;
  }
  const reviewed: ReviewedAccount = await api.review(jwt.text, role.audience);
  // A legacy token names its secret; Kubernetes vouched for the token, so its claims are the account's.
  return { ...reviewed, secretName: claimed?.secretName ?? '' };
}

export function loginPath(settings: LoginSettings): PathDeclaration {
  const { storage } = settings;

  async function login(req: Request, f: FieldData): Promise<AuthResponse> {
    const roleName = f.get<string>('role').toLowerCase();
    const role = await ROLES.get(storage, roleName);
    if (!role) throw ServiceError.badRequest(`invalid role name "${roleName}"`);
    if (!addressAllowed(role.token_bound_cidrs, req.remoteAddress)) {
      throw ServiceError.forbidden(`permission denied: source address "${req.remoteAddress ?? ''}" is not allowed by the role's token_bound_cidrs`);
    }
    const config = await requireConfig(storage);
    const jwt = parseJwt(f.get('jwt'));
    checkClaims(jwt, { issuer: config.disable_iss_validation ? undefined : config.issuer || LEGACY_ISSUER, audience: role.audience });
    const api = await KubernetesApi.of(config, settings.apiDeadlineMs);
    const account = await vouchedAccount(jwt, role, config, api);
    const problem = await bindingProblem(roleName, role, account, (namespace) => api.namespaceLabels(namespace));
    if (problem) throw ServiceError.forbidden(`permission denied: ${problem}`);
    const annotations = config.use_annotations_as_alias_metadata ? await api.aliasMetadataAnnotations(account, jwt.text, ACCOUNT_METADATA_KEYS) : {};
    const metadata = accountMetadata(account);
    return tokenAuth(role, {
      displayName: `${account.namespace}-${account.name}`,
      metadata: { ...metadata, role: roleName },
      alias: { name: aliasName(role, account), metadata: { ...annotations, ...metadata } },
      internalData: { role: roleName, ...metadata },
    });
  }

  return {
    pattern: 'login',
    synopsis: 'Logs in with a Kubernetes service account\'s JWT.',
    description:
      'The JWT is checked by the Kubernetes TokenReview API (or against the configured pem_keys); the service account it belongs to ' +
      'must be bound by the role. The token gets the role\'s token settings; its entity alias is the account\'s uid, or `<namespace>/<name>`.',
    fields: {
      role: { type: 'string', required: true, description: 'Name of the role to log in with.' },
      jwt: { type: 'string', sensitive: true, required: true, description: 'The service account\'s JWT (e.g. the pod\'s token file).' },
    },
    operations: { update: { summary: 'Log in.', unauthenticated: true, handler: async (req, f) => ({ auth: await login(req, f) }) } },
  };
}

/**
 * A token is renewed while its role still exists and still binds its service account under the
 * same alias; it takes the role's policies and TTLs as they are now.
 */
export async function renewKubernetesAuth(settings: LoginSettings, auth: AuthResponse): Promise<AuthResponse> {
  const internal = (key: string) => String(auth.internalData?.[key] ?? '');
  const roleName = internal('role');
  const role = await ROLES.get(settings.storage, roleName);
  if (!role) throw ServiceError.badRequest(`role "${roleName}" no longer exists; the token cannot be renewed`);
  const account: ServiceAccount = {
    namespace: internal('service_account_namespace'),
    name: internal('service_account_name'),
    uid: internal('service_account_uid'),
    secretName: internal('service_account_secret_name'),
  };
  const problem = await bindingProblem(roleName, role, account, async (namespace) =>
    (await KubernetesApi.of(await requireConfig(settings.storage), settings.apiDeadlineMs)).namespaceLabels(namespace),
  );
  if (problem) throw ServiceError.badRequest(`${problem} any more; the token cannot be renewed`);
  if (aliasName(role, account) !== auth.alias?.name) throw ServiceError.badRequest(`the alias_name_source of role "${roleName}" changed; the token cannot be renewed`);
  return renewedAuth(role, auth);
}
