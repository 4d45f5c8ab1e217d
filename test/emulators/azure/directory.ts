/**
 * An Azure AD (Entra ID) directory of one tenant, as the SDKs' client-credentials sign-in sees it:
 * the tenant's OpenID configuration and its token endpoint, which checks the app registration's
 * client secret and issues an RS256 access token for the resource the scope names
 * (`<resource>/.default`, one of the resources the directory was given). Tokens are v1 tokens as
 * Azure issues them to Storage and Key Vault: issuer `https://sts.windows.net/<tenant>/`, audience
 * the resource, the tenant in `tid`, an hour's lifetime.
 *
 * `createAzureDirectory` is the directory's handler, for an emulator that serves it beside its
 * service on one base URL (Key Vault's); `startAzureDirectory` serves it alone over TLS.
 */
import { generateKeyPairSync, randomUUID, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { FaultInjector, listenLocally, readBody, sendJson } from '../http-server';
import { signJwt, verifyJwt } from '../jwt';

export interface AzureDirectory {
  tenantId: string;
  /** App registrations of the tenant: client id → client secret. */
  apps: Map<string, string>;
  /** Answers a directory request; `base` is the URL the directory is served at. */
  handle(res: ServerResponse, method: string, path: string, form: URLSearchParams, base: string): void;
  /** The claims of a token this directory issued for `resource`, or what is wrong with it. */
  verify(token: string, resource: string): { claims: Record<string, unknown> } | { problem: string };
  /** The next `times` token requests fail with this status and OAuth error code. */
  failNext(status: number, code: string, times?: number): void;
}

export interface AzureDirectoryServer extends AzureDirectory {
  /** What AZURE_AUTHORITY_HOST (or a credential's `authorityHost`) is set to. */
  url: string;
  /** Every request as `METHOD /path`, in order. */
  calls: string[];
  close(): Promise<void>;
}

const TOKEN_LIFETIME_S = 3600;

export function createAzureDirectory(resources: readonly string[], tenantId: string = randomUUID()): AzureDirectory {
  const signing = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const apps = new Map<string, string>();
  const faults = new FaultInjector();

  const token = (res: ServerResponse, form: URLSearchParams) => {
    const fault = faults.take('token');
    if (fault) return sendJson(res, fault.status, fault.body);
    if (form.get('grant_type') !== 'client_credentials') return sendJson(res, 400, { error: 'unsupported_grant_type', error_description: 'AADSTS70003: The app requested an unsupported grant type.' });
    const clientId = form.get('client_id') ?? '';
    const expected = apps.get(clientId);
    if (expected === undefined) return sendJson(res, 400, { error: 'unauthorized_client', error_description: `AADSTS700016: Application with identifier '${clientId}' was not found in the directory.` });
    const given = Buffer.from(form.get('client_secret') ?? '');
    if (given.length !== Buffer.byteLength(expected) || !timingSafeEqual(given, Buffer.from(expected))) {
      return sendJson(res, 401, { error: 'invalid_client', error_description: `AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${clientId}'.`, error_codes: [7000215] });
    }
    const resource = resources.find((candidate) => form.get('scope') === `${candidate}/.default`);
    if (!resource) return sendJson(res, 400, { error: 'invalid_scope', error_description: `AADSTS70011: The provided value for scope ${form.get('scope')} is not valid.` });
    const now = Math.floor(Date.now() / 1000);
    const accessToken = signJwt({ aud: resource, iss: `https://sts.windows.net/${tenantId}/`, tid: tenantId, appid: clientId, iat: now, nbf: now, exp: now + TOKEN_LIFETIME_S }, signing.privateKey);
    return sendJson(res, 200, { token_type: 'Bearer', expires_in: TOKEN_LIFETIME_S, ext_expires_in: TOKEN_LIFETIME_S, access_token: accessToken });
  };

  return {
    tenantId,
    apps,
    handle(res, method, path, form, base) {
      const [, tenant, ...rest] = path.split('/');
      if (tenant !== tenantId) return sendJson(res, 400, { error: 'invalid_tenant', error_description: `AADSTS90002: Tenant '${tenant}' not found.` });
      const authority = `${base}/${tenant}`;
      if (method === 'GET' && rest.join('/') === 'v2.0/.well-known/openid-configuration') {
        return sendJson(res, 200, {
          issuer: `${authority}/v2.0`,
          authorization_endpoint: `${authority}/oauth2/v2.0/authorize`,
          token_endpoint: `${authority}/oauth2/v2.0/token`,
          end_session_endpoint: `${authority}/oauth2/v2.0/logout`,
          jwks_uri: `${authority}/discovery/v2.0/keys`,
          response_types_supported: ['code', 'id_token', 'token'],
          subject_types_supported: ['pairwise'],
          id_token_signing_alg_values_supported: ['RS256'],
        });
      }
      if (method === 'POST' && rest.join('/') === 'oauth2/v2.0/token') return token(res, form);
      return sendJson(res, 404, { error: 'not_found' });
    },
    verify(accessToken, resource) {
      const verified = verifyJwt(accessToken, signing.publicKey);
      if ('problem' in verified) return verified;
      if (verified.claims.aud !== resource) return { problem: 'wrong audience' };
      if (verified.claims.tid !== tenantId) return { problem: 'token of another tenant' };
      return verified;
    },
    failNext: (status, code, times) => faults.failNext('token', { status, body: { error: code, error_description: code } }, times),
  };
}

/** A directory on its own HTTPS server (the SDKs send client secrets over TLS only). */
export async function startAzureDirectory(tls: { cert: string; key: string }, resources: readonly string[]): Promise<AzureDirectoryServer> {
  const directory = createAzureDirectory(resources);
  const calls: string[] = [];
  let base = '';
  const server = await listenLocally(async (req, res) => {
    const url = new URL(req.url ?? '/', 'https://emulator');
    calls.push(`${req.method} ${url.pathname}`);
    const form = new URLSearchParams((await readBody(req)).toString('utf8'));
    directory.handle(res, req.method ?? 'GET', url.pathname, form, base);
  }, tls);
  base = server.url;
  return { ...directory, url: server.url, calls, close: server.close };
}
