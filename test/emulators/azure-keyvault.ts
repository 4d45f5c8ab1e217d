/**
 * An Azure Key Vault emulator with its directory (Azure AD), over TLS as the SDK requires for
 * bearer tokens. The directory serves the OpenID configuration and client-credentials tokens
 * (RS256, checked against the app registrations it was given); the vault answers a request without
 * a token with the 401 challenge naming the directory and resource, checks every token (signature,
 * audience, tenant, expiry), and keeps what Key Vault keeps: secrets by name with versions and
 * tags, soft delete, recovery and purge (refused under purge protection).
 */
import { generateKeyPairSync, randomUUID, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { FaultInjector, listenLocally, readBody, sendJson } from './http-server';
import { signJwt, verifyJwt } from './jwt';

export interface VaultSecret {
  name: string;
  /** Values, oldest first; the last is current. */
  versions: { id: string; value: string }[];
  tags: Record<string, string>;
  deletedAt?: Date;
}

export interface AzureKeyVaultEmulator {
  /** The directory (authority host) and the vault share this base URL. */
  url: string;
  tenantId: string;
  /** App registrations of the tenant: client id → client secret. */
  apps: Map<string, string>;
  /** Live secrets by name. */
  secrets: Map<string, VaultSecret>;
  /** Soft-deleted secrets by name (recoverable or purgeable). */
  deleted: Map<string, VaultSecret>;
  /** When set, purging is refused (403) as in a vault with purge protection. */
  purgeProtection: boolean;
  /** The current value of a live secret. */
  value(name: string): string | undefined;
  calls: string[];
  /** Operations: `token`, `set-secret`, `delete-secret`, `purge-secret`, `recover-secret`. */
  failNext(operation: string, status: number, code: string, times?: number): void;
  close(): Promise<void>;
}

/** The resource Key Vault names in its challenge; tokens must be for it. */
const VAULT_RESOURCE = 'https://vault.azure.net';
const NAME = /^[0-9a-zA-Z-]{1,127}$/;

export async function startAzureKeyVaultEmulator(tls: { cert: string; key: string }, tenantId = randomUUID()): Promise<AzureKeyVaultEmulator> {
  const signing = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const apps = new Map<string, string>();
  const secrets = new Map<string, VaultSecret>();
  const deleted = new Map<string, VaultSecret>();
  const calls: string[] = [];
  const faults = new FaultInjector();
  const state = { purgeProtection: false };
  let base = '';

  const vaultError = (res: ServerResponse, status: number, code: string, message: string, inner?: string) =>
    sendJson(res, status, { error: { code, message, ...(inner ? { innererror: { code: inner } } : {}) } });
  const bundle = (secret: VaultSecret) => {
    const current = secret.versions[secret.versions.length - 1];
    return { value: current.value, id: `${base}/secrets/${secret.name}/${current.id}`, attributes: { enabled: true, recoveryLevel: 'Recoverable+Purgeable' }, tags: secret.tags };
  };
  const deletedBundle = (secret: VaultSecret) => {
    const { value: _value, ...described } = bundle(secret);
    return { ...described, recoveryId: `${base}/deletedsecrets/${secret.name}`, deletedDate: Math.floor((secret.deletedAt?.getTime() ?? 0) / 1000) };
  };

  const directory = async (res: ServerResponse, method: string, path: string, form: URLSearchParams) => {
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
    if (method !== 'POST' || rest.join('/') !== 'oauth2/v2.0/token') return sendJson(res, 404, { error: 'not_found' });
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
    if (form.get('scope') !== `${VAULT_RESOURCE}/.default`) return sendJson(res, 400, { error: 'invalid_scope', error_description: `AADSTS70011: The provided value for scope ${form.get('scope')} is not valid.` });
    const now = Math.floor(Date.now() / 1000);
    const token = signJwt({ aud: VAULT_RESOURCE, iss: `${authority}/`, tid: tenant, appid: clientId, iat: now, nbf: now, exp: now + 3600 }, signing.privateKey);
    return sendJson(res, 200, { token_type: 'Bearer', expires_in: 3600, ext_expires_in: 3600, access_token: token });
  };

  const vault = async (res: ServerResponse, method: string, url: URL, authorization: string, body: Buffer) => {
    const challenge = { 'www-authenticate': `Bearer authorization="${base}/${tenantId}", resource="${VAULT_RESOURCE}"` };
    const token = /^Bearer (.+)$/.exec(authorization)?.[1];
    if (!token) return sendJson(res, 401, { error: { code: 'Unauthorized', message: 'AKV10000: Request is missing a Bearer or PoP token.' } }, challenge);
    const verified = verifyJwt(token, signing.publicKey);
    const problem = 'problem' in verified ? verified.problem : verified.claims.aud !== VAULT_RESOURCE ? 'wrong audience' : verified.claims.tid !== tenantId ? 'token of another tenant' : undefined;
    if (problem) return sendJson(res, 401, { error: { code: 'Unauthorized', message: `AKV10032: Invalid token: ${problem}.` } }, challenge);
    if (!url.searchParams.get('api-version')) return vaultError(res, 400, 'BadParameter', 'The api-version query parameter is required.');

    const [collection, name, action] = url.pathname.split('/').slice(1).map(decodeURIComponent);
    const operation =
      collection === 'secrets' ? ({ PUT: 'set-secret', GET: 'get-secret', DELETE: 'delete-secret' } as Record<string, string>)[method]
      : collection === 'deletedsecrets' ? (action === 'recover' && method === 'POST' ? 'recover-secret' : ({ GET: 'get-deleted-secret', DELETE: 'purge-secret' } as Record<string, string>)[method])
      : undefined;
    if (!operation || !name) return vaultError(res, 404, 'NotFound', 'The requested resource was not found.');
    const fault = faults.take(operation);
    if (fault) return sendJson(res, fault.status, fault.body);
    if (!NAME.test(name)) return vaultError(res, 400, 'BadParameter', `The request URI contains an invalid name: ${name}`);
    const notFound = () => vaultError(res, 404, 'SecretNotFound', `A secret with (name/id) ${name} was not found in this key vault.`);

    switch (operation) {
      case 'set-secret': {
        if (deleted.has(name)) {
          return vaultError(res, 409, 'Conflict', `Secret ${name} is currently in a deleted but recoverable state, and its name cannot be reused; in this state, the secret can only be recovered or purged.`, 'ObjectIsDeletedButRecoverable');
        }
        const input = JSON.parse(body.toString('utf8') || '{}') as { value?: unknown; tags?: Record<string, string> };
        if (typeof input.value !== 'string') return vaultError(res, 400, 'BadParameter', 'Property value is required.');
        const secret = secrets.get(name) ?? { name, versions: [], tags: {} };
        secret.versions.push({ id: randomUUID().replace(/-/g, ''), value: input.value });
        secret.tags = input.tags ?? {};
        secrets.set(name, secret);
        return sendJson(res, 200, bundle(secret));
      }
      case 'get-secret': {
        const secret = secrets.get(name);
        return secret ? sendJson(res, 200, bundle(secret)) : notFound();
      }
      case 'delete-secret': {
        const secret = secrets.get(name);
        if (!secret) return notFound();
        secrets.delete(name);
        secret.deletedAt = new Date();
        deleted.set(name, secret);
        return sendJson(res, 200, deletedBundle(secret));
      }
      case 'get-deleted-secret': {
        const secret = deleted.get(name);
        return secret ? sendJson(res, 200, deletedBundle(secret)) : notFound();
      }
      case 'purge-secret': {
        if (!deleted.has(name)) return notFound();
        if (state.purgeProtection) return vaultError(res, 403, 'Forbidden', 'Operation "purge" is not allowed because purge protection is enabled for this vault.');
        deleted.delete(name);
        res.writeHead(204).end();
        return;
      }
      default: {
        const secret = deleted.get(name);
        if (!secret) return notFound();
        deleted.delete(name);
        delete secret.deletedAt;
        secrets.set(name, secret);
        return sendJson(res, 200, bundle(secret));
      }
    }
  };

  const server = await listenLocally(async (req, res) => {
    const url = new URL(req.url ?? '/', 'https://emulator');
    calls.push(`${req.method} ${url.pathname}`);
    const body = await readBody(req);
    if (url.pathname.startsWith('/secrets/') || url.pathname.startsWith('/deletedsecrets/')) {
      return vault(res, req.method ?? 'GET', url, String(req.headers.authorization ?? ''), body);
    }
    return directory(res, req.method ?? 'GET', url.pathname, new URLSearchParams(body.toString('utf8')));
  }, tls);
  base = server.url;

  return {
    url: server.url,
    tenantId,
    apps,
    secrets,
    deleted,
    get purgeProtection() {
      return state.purgeProtection;
    },
    set purgeProtection(value: boolean) {
      state.purgeProtection = value;
    },
    value: (name) => secrets.get(name)?.versions.at(-1)?.value,
    calls,
    failNext: (operation, status, code, times) =>
      faults.failNext(operation, { status, body: operation === 'token' ? { error: code, error_description: code } : { error: { code, message: code } } }, times),
    close: server.close,
  };
}
