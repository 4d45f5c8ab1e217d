/**
 * oidc/auth_url and oidc/callback: the authorization code flow with PKCE. The flow between the two
 * (nonce, code verifier, redirect URI, role) is kept in storage under its state's hash, so any
 * process may answer the callback, and is consumed once, in a transaction under a lock.
 */
import { createHash } from 'node:crypto';
import * as oidc from 'openid-client';
import type { FieldData, FieldMap, PathDeclaration, Request, Response } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { loginAuth } from './claims';
import { checkSourceAddress, type JwtAuth } from './method';
import { failureReason, unreachable } from './provider-fetch';
import type { IdentityProvider } from './providers';
import { OIDC_FLOWS, type JwtConfig, type OidcFlow } from './records';
import { roleExpectations, verifiedClaims } from './verification';

const LOGIN_FAILED = 'OIDC login failed';

/** The error codes an authorization response may carry (RFC 6749 4.1.2.1); others are not repeated to the client. */
const PROVIDER_ERRORS = new Set(['invalid_request', 'unauthorized_client', 'access_denied', 'unsupported_response_type', 'invalid_scope', 'server_error', 'temporarily_unavailable']);

/** openid-client's codes for an ID token whose claims do not verify. */
const ID_TOKEN_REFUSALS = new Set(['OAUTH_JWT_CLAIM_COMPARISON_FAILED', 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED']);

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

const CALLBACK_FIELDS: FieldMap = {
  state: { type: 'string', required: true, description: 'The state of the login, as the provider hands it back.' },
  code: { type: 'string', sensitive: true, description: 'The authorization code the provider issued (the method asks for codes only, never for ID tokens in the answer).' },
  client_nonce: { type: 'string', description: 'The client_nonce given to auth_url, if one was.' },
  iss: { type: 'string', description: 'The issuer, when the provider names it in its answer.' },
  error: { type: 'string', description: 'The provider\'s error code, when the login failed there.' },
  error_description: { type: 'string', description: 'The provider\'s words on its error (logged, not repeated).' },
};

/** Whether `uri` is allowed: listed, or a loopback URI listed with another port (RFC 8252 7.3). */
export function redirectAllowed(uri: string, allowed: string[]): boolean {
  if (allowed.includes(uri)) return true;
  const withoutPort = (text: string) => {
    if (!URL.canParse(text)) return undefined;
    const url = new URL(text);
    if (!LOOPBACK_HOSTS.has(url.hostname)) return undefined;
    url.port = '';
    return url.href;
  };
  const given = withoutPort(uri);
  return given !== undefined && allowed.some((entry) => withoutPort(entry) === given);
}

function flowKey(state: string): string {
  return createHash('sha256').update(state).digest('hex');
}

export function oidcPaths(method: JwtAuth): PathDeclaration[] {
  /** The config, when it can run OIDC logins (discovery and a client). */
  async function oidcConfig(): Promise<JwtConfig> {
    const config = await method.requireConfig();
    if (!config.oidc_discovery_url || !config.oidc_client_id) {
      throw ServiceError.badRequest('OIDC login is not configured for this mount: it needs oidc_discovery_url, oidc_client_id and oidc_client_secret');
    }
    return config;
  }

  /** The provider of an `oidcConfig`, which has a client. */
  async function oidcProvider(config: JwtConfig): Promise<IdentityProvider & { client: oidc.Configuration }> {
    const provider = await method.provider(config);
    if (!provider.client) throw ServiceError.internal('the OIDC client of the configuration is missing');
    return { ...provider, client: provider.client };
  }

  async function authUrl(f: FieldData): Promise<Response> {
    const config = await oidcConfig();
    const { name, role } = await method.loginRole(config, f.get('role') ?? '');
    if (role.role_type !== 'oidc') throw ServiceError.badRequest(`role "${name}" has role_type "jwt": OIDC logins need a role of role_type "oidc"`);
    const requested = f.get<string>('redirect_uri');
    if (!URL.canParse(requested)) throw ServiceError.badRequest(`field "redirect_uri": "${requested}" is not a URL`);
    // The namespace may travel in the state instead, so one redirect URI serves every namespace.
    const redirect = new URL(requested);
    const namespace = config.namespace_in_state ? (redirect.searchParams.get('namespace') ?? '') : '';
    redirect.searchParams.delete('namespace');
    const redirectUri = namespace ? redirect.href : requested;
    if (!redirectAllowed(redirectUri, role.allowed_redirect_uris)) {
      throw ServiceError.badRequest(`field "redirect_uri": "${redirectUri}" is not one of the role's allowed_redirect_uris`);
    }
    const { client } = await oidcProvider(config);
    const state = namespace ? `${oidc.randomState()},ns=${namespace}` : oidc.randomState();
    const flow: OidcFlow = {
      role: name,
      redirect_uri: redirectUri,
      nonce: oidc.randomNonce(),
      code_verifier: oidc.randomPKCECodeVerifier(),
      client_nonce: f.get('client_nonce') ?? '',
      expires_at: Date.now() + method.settings.oidcFlowTtlMs,
    };
    const parameters: Record<string, string> = {
      redirect_uri: redirectUri,
      scope: ['openid', ...role.oidc_scopes.filter((scope) => scope !== 'openid')].join(' '),
      state,
      nonce: flow.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(flow.code_verifier),
      code_challenge_method: 'S256',
      ...(config.oidc_response_mode === 'form_post' && { response_mode: 'form_post' }),
      ...(role.max_age > 0 && { max_age: String(role.max_age) }),
    };
    await OIDC_FLOWS.put(method.storage, flowKey(state), flow);
    return { data: { auth_url: oidc.buildAuthorizationUrl(client, parameters).href } };
  }

  /** The flow of `state`, removed so that no other callback can use it; null when there is none (or it expired). */
  async function takeFlow(state: string): Promise<OidcFlow | null> {
    const key = OIDC_FLOWS.keyOf(flowKey(state));
    const stored = await method.storage.transaction(async (tx) => {
      await tx.lock(key);
      const value = await tx.get(key);
      if (value) await tx.delete(key);
      return value;
    });
    const flow = stored && (JSON.parse(stored.toString('utf8')) as OidcFlow);
    return flow && flow.expires_at > Date.now() ? flow : null;
  }

  async function callback(req: Request, f: FieldData, formPost: boolean): Promise<Response> {
    const config = await oidcConfig();
    if (formPost && config.oidc_response_mode !== 'form_post') {
      throw ServiceError.methodNotAllowed('the callback takes a form post only when oidc_response_mode is "form_post"');
    }
    // A read's required fields are not enforced for it.
    const state = f.get<string | undefined>('state');
    if (!state) throw ServiceError.badRequest('missing required field "state"');
    const flow = await takeFlow(state);
    if (!flow) throw ServiceError.badRequest(`${LOGIN_FAILED}: expired or missing OAuth state`);
    if (f.has('error')) {
      const error = f.get<string>('error');
      method.context.logger.warn({ error, error_description: f.get('error_description') }, 'the OIDC provider answered an error');
      throw ServiceError.badRequest(`${LOGIN_FAILED}: ${PROVIDER_ERRORS.has(error) ? `the provider answered "${error}"` : 'the provider answered an unknown error'}`);
    }
    if (flow.client_nonce && f.get('client_nonce') !== flow.client_nonce) throw ServiceError.badRequest(`${LOGIN_FAILED}: invalid client_nonce`);
    const role = await method.role(flow.role);
    if (!role) throw ServiceError.badRequest(`${LOGIN_FAILED}: role "${flow.role}" could not be found`);
    checkSourceAddress(role, req);
    const provider = await oidcProvider(config);
    if (!f.has('code')) throw ServiceError.badRequest(`${LOGIN_FAILED}: no code received`);
    const idToken = await exchangeCode(provider.client, flow, role.max_age, f);
    const claims = await verifiedClaims(idToken, 'id_token', provider, roleExpectations(config, role, config.bound_issuer || provider.issuer, config.oidc_client_id));
    if (claims.nonce !== flow.nonce) throw ServiceError.forbidden('permission denied: the ID token\'s nonce is not the login\'s');
    if (role.verbose_oidc_logging) method.context.logger.debug({ role: flow.role, claims }, 'OIDC login claims');
    return { auth: loginAuth(flow.role, role, claims) };
  }

  /** The ID token the code is exchanged for (with the PKCE verifier), its claims checked by openid-client. */
  async function exchangeCode(client: oidc.Configuration, flow: OidcFlow, maxAge: number, f: FieldData): Promise<string> {
    const state = f.get<string>('state');
    const answer = new URL(flow.redirect_uri);
    answer.search = '';
    answer.searchParams.set('code', f.get('code'));
    answer.searchParams.set('state', state);
    if (f.has('iss')) answer.searchParams.set('iss', f.get('iss'));
    const checks = { pkceCodeVerifier: flow.code_verifier, expectedState: state, expectedNonce: flow.nonce, idTokenExpected: true };
    const endpoint = client.serverMetadata().token_endpoint;
    let idToken: string | undefined;
    try {
      ({ id_token: idToken } = await oidc.authorizationCodeGrant(client, answer, maxAge ? { ...checks, maxAge } : checks));
    } catch (err) {
      throw exchangeFailure(err, endpoint);
    }
    if (!idToken) throw ServiceError.badGateway(`${LOGIN_FAILED}: the token endpoint "${endpoint}" answered no ID token`);
    return idToken;
  }

  return [
    {
      pattern: 'oidc/auth_url',
      synopsis: 'Starts an OIDC login: answers the provider URL to send the user to.',
      description: 'The URL carries a fresh state, nonce and PKCE (S256) challenge; the login must complete at oidc/callback within 10 minutes.',
      fields: {
        role: { type: 'string', description: 'The role to log in with; default the configured default_role.' },
        redirect_uri: { type: 'string', required: true, description: 'Where the provider sends the user back: one of the role\'s allowed_redirect_uris.' },
        client_nonce: { type: 'string', description: 'A nonce of the client\'s, which its callback must repeat.' },
      },
      operations: { update: { summary: 'Request an authorization URL.', unauthenticated: true, handler: (_req, f) => authUrl(f) } },
    },
    {
      pattern: 'oidc/callback',
      synopsis: 'Completes an OIDC login: exchanges the code for an ID token and logs in with it.',
      description: 'A state is good for one callback. GET takes the provider\'s redirect (oidc_response_mode "query"); POST its form post ("form_post").',
      fields: CALLBACK_FIELDS,
      operations: {
        read: { summary: 'Complete a login from the provider\'s redirect.', unauthenticated: true, forwardQuery: true, handler: (req, f) => callback(req, f, false) },
        update: { summary: 'Complete a login from the provider\'s form post.', unauthenticated: true, handler: (req, f) => callback(req, f, true) },
      },
    },
  ];
}

/** What a failed code exchange answers: the provider refused (400), did not answer (502), or its ID token does not verify (403). */
function exchangeFailure(err: unknown, endpoint: string | undefined): ServiceError {
  if (err instanceof oidc.ResponseBodyError) return ServiceError.badRequest(`${LOGIN_FAILED}: the provider refused the code: ${err.error}`);
  if (err instanceof oidc.WWWAuthenticateChallengeError) return ServiceError.badRequest(`${LOGIN_FAILED}: the provider refused the client's credentials (HTTP ${err.status})`);
  if (unreachable(err)) return ServiceError.badGateway(`${LOGIN_FAILED}: the token endpoint "${endpoint}" did not answer: ${failureReason(err)}`);
  if (err instanceof oidc.ClientError && ID_TOKEN_REFUSALS.has(err.code ?? '')) return ServiceError.forbidden(`permission denied: the ID token does not verify: ${failureReason(err)}`);
  return ServiceError.badGateway(`${LOGIN_FAILED}: the token endpoint "${endpoint}" answered unexpectedly: ${failureReason(err)}`);
}

/** Removes the flows whose time ran out (a login that was started and never completed). */
export async function removeExpiredFlows(method: JwtAuth): Promise<void> {
  for (const key of await OIDC_FLOWS.list(method.storage)) {
    const flow = await OIDC_FLOWS.get(method.storage, key);
    if (flow && flow.expires_at <= Date.now()) await OIDC_FLOWS.delete(method.storage, key);
  }
}
