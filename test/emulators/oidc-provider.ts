/**
 * An OpenID Connect provider for tests: discovery, a JWKS with key IDs and key rotation, the
 * authorization code flow with PKCE (S256) for one confidential client, and JWTs minted on demand
 * for direct JWT logins. The user who "signs in" at the authorization endpoint is the one the test
 * chose beforehand (`signInAs`). Each endpoint can be made to accept requests and never answer.
 * Only node:crypto: the end-to-end tests that start it are CommonJS.
 */
import { createHash, generateKeyPairSync, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenLocally, readBody, sendJson } from './http-server';
import { signJwt } from './jwt';

/** A user's claims: `sub`, and whatever else the ID token should say (email, groups, ...). */
export interface OidcUser {
  sub: string;
  [claim: string]: unknown;
}

export interface OidcProviderOptions {
  /** Default "svc-client". */
  clientId?: string;
  /** Default a random one. */
  clientSecret?: string;
  /** The redirect URIs registered for the client; default any. */
  redirectUris?: string[];
  /** Serve HTTPS with this certificate (for 127.0.0.1) and key: PEM files. */
  tls?: { cert: string; key: string };
}

export type OidcEndpoint = 'discovery' | 'jwks' | 'authorize' | 'token';

export interface MintOptions {
  /** Expired an hour ago: beyond any leeway. */
  expired?: boolean;
  /** Signed with a key the JWKS does not hold (under the current key's kid). */
  wrongKey?: boolean;
  /** A claim changed after signing. */
  tampered?: boolean;
  /** The header's kid; default the current key's. */
  kid?: string;
}

export interface OidcProvider {
  /** Base URL, which is also the issuer (the oidc_discovery_url). */
  url: string;
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The user the next authorization requests sign in as. */
  signInAs(user: OidcUser): void;
  /** A JWT signed with the current key: `iss`, `iat` and a 5-minute `exp`, then `claims` over them. */
  mint(claims: Record<string, unknown>, options?: MintOptions): string;
  /** A new signing key (and kid); the old one leaves the JWKS unless `keepOld`. */
  rotateKeys(options?: { keepOld?: boolean }): void;
  /** The current signing key's public key, PEM (SPKI). */
  publicKeyPem(): string;
  /** While stalled, the endpoint accepts requests and never answers them. */
  stall(endpoint: OidcEndpoint, stalled?: boolean): void;
  /** Requests each endpoint received. */
  readonly requests: Record<OidcEndpoint, number>;
  close(): Promise<void>;
}

interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/** An authorization code, until it is redeemed once. */
interface Grant {
  redirectUri: string;
  codeChallenge: string;
  nonce?: string;
  scope: string;
  user: OidcUser;
  expiresAt: number;
  redeemed: boolean;
}

const CODE_LIFETIME_MS = 60_000;
const TOKEN_LIFETIME_S = 300;

function newKey(): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid: randomBytes(8).toString('hex'), privateKey, publicKey };
}

const randomToken = () => randomBytes(24).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

export async function startOidcProvider(options: OidcProviderOptions = {}): Promise<OidcProvider> {
  const clientId = options.clientId ?? 'svc-client';
  const clientSecret = options.clientSecret ?? randomToken();
  let current = newKey();
  let retired: SigningKey[] = [];
  let user: OidcUser | undefined;
  const grants = new Map<string, Grant>();
  const stalled = new Set<OidcEndpoint>();
  const requests: Record<OidcEndpoint, number> = { discovery: 0, jwks: 0, authorize: 0, token: 0 };
  let issuer = '';

  const sign = (payload: Record<string, unknown>, key = current, kid = current.kid) => signJwt(payload, key.privateKey, { kid });

  const discovery = () => ({
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    jwks_uri: `${issuer}/jwks`,
    response_types_supported: ['code'],
    response_modes_supported: ['query', 'form_post'],
    grant_types_supported: ['authorization_code'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    code_challenge_methods_supported: ['S256'],
    scopes_supported: ['openid', 'email', 'profile', 'groups'],
  });

  const jwks = () => ({
    keys: [current, ...retired].map(({ kid, publicKey }) => ({ ...publicKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'RS256' })),
  });

  /** The answer to an authorization request whose client and redirect URI are good: a redirect (or form post) back. */
  function answerBack(res: ServerResponse, redirectUri: string, responseMode: string, parameters: Record<string, string>): void {
    if (responseMode === 'form_post') {
      const inputs = Object.entries(parameters).map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`);
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<html><body onload="document.forms[0].submit()"><form method="post" action="${escapeHtml(redirectUri)}">${inputs.join('')}</form></body></html>`);
      return;
    }
    const location = new URL(redirectUri);
    for (const [name, value] of Object.entries(parameters)) location.searchParams.set(name, value);
    res.writeHead(302, { location: location.href });
    res.end();
  }

  function authorize(query: URLSearchParams, res: ServerResponse): void {
    const redirectUri = query.get('redirect_uri') ?? '';
    if (query.get('client_id') !== clientId) return sendJson(res, 400, { error: 'invalid_request', error_description: 'unknown client_id' });
    if (!URL.canParse(redirectUri) || (options.redirectUris && !options.redirectUris.includes(redirectUri))) {
      return sendJson(res, 400, { error: 'invalid_request', error_description: 'redirect_uri is not registered for the client' });
    }
    const state = query.get('state') ?? '';
    const back = (parameters: Record<string, string>) => answerBack(res, redirectUri, query.get('response_mode') ?? 'query', { ...parameters, ...(state && { state }) });
    const scope = query.get('scope') ?? '';
    if (query.get('response_type') !== 'code') return back({ error: 'unsupported_response_type' });
    if (!scope.split(' ').includes('openid')) return back({ error: 'invalid_scope', error_description: 'openid is required' });
    const codeChallenge = query.get('code_challenge');
    if (!codeChallenge || query.get('code_challenge_method') !== 'S256') return back({ error: 'invalid_request', error_description: 'a PKCE S256 code_challenge is required' });
    if (!user) return back({ error: 'access_denied', error_description: 'no user signed in' });
    const code = randomToken();
    grants.set(code, { redirectUri, codeChallenge, nonce: query.get('nonce') ?? undefined, scope, user, expiresAt: Date.now() + CODE_LIFETIME_MS, redeemed: false });
    back({ code });
  }

  /** The client's ID and secret, by HTTP Basic (form-encoded, RFC 6749 2.3.1) or in the body; undefined when both or neither. */
  function clientCredentials(req: IncomingMessage, form: URLSearchParams): { id: string; secret: string } | undefined {
    const header = req.headers.authorization ?? '';
    const inBody = form.has('client_secret');
    if (header.startsWith('Basic ') === inBody) return undefined;
    if (inBody) return { id: form.get('client_id') ?? '', secret: form.get('client_secret') ?? '' };
    const decoded = Buffer.from(header.slice('Basic '.length), 'base64').toString('utf8');
    const separator = decoded.indexOf(':');
    const formDecode = (text: string) => decodeURIComponent(text.replace(/\+/g, ' '));
    return separator < 0 ? undefined : { id: formDecode(decoded.slice(0, separator)), secret: formDecode(decoded.slice(separator + 1)) };
  }

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST') return sendJson(res, 405, { error: 'invalid_request' });
    const form = new URLSearchParams((await readBody(req)).toString('utf8'));
    const client = clientCredentials(req, form);
    if (!client || client.id !== clientId || !sameText(client.secret, clientSecret)) {
      return sendJson(res, 401, { error: 'invalid_client' }, { 'www-authenticate': 'Basic realm="oidc-provider"' });
    }
    if (form.get('grant_type') !== 'authorization_code') return sendJson(res, 400, { error: 'unsupported_grant_type' });
    const refuse = (description: string) => sendJson(res, 400, { error: 'invalid_grant', error_description: description });
    const grant = grants.get(form.get('code') ?? '');
    if (!grant || grant.expiresAt < Date.now()) return refuse('unknown or expired code');
    if (grant.redeemed) return refuse('the code was already redeemed');
    grant.redeemed = true;
    if (form.get('redirect_uri') !== grant.redirectUri) return refuse('redirect_uri differs from the authorization request');
    const verifier = form.get('code_verifier') ?? '';
    if (createHash('sha256').update(verifier).digest('base64url') !== grant.codeChallenge) return refuse('code_verifier does not match the code_challenge');
    const issuedAt = now();
    const idToken = sign({
      ...grant.user,
      iss: issuer,
      aud: clientId,
      iat: issuedAt,
      exp: issuedAt + TOKEN_LIFETIME_S,
      auth_time: issuedAt,
      ...(grant.nonce && { nonce: grant.nonce }),
    });
    sendJson(res, 200, { access_token: randomToken(), token_type: 'Bearer', expires_in: 3600, scope: grant.scope, id_token: idToken }, { 'cache-control': 'no-store' });
  }

  const endpointOf = (path: string): OidcEndpoint | undefined =>
    ({ '/.well-known/openid-configuration': 'discovery', '/jwks': 'jwks', '/authorize': 'authorize', '/token': 'token' } as const)[path];

  const server = await listenLocally(async (req, res) => {
    const url = new URL(req.url ?? '/', issuer);
    const endpoint = endpointOf(url.pathname);
    if (!endpoint) return sendJson(res, 404, { error: 'not_found' });
    requests[endpoint]++;
    if (stalled.has(endpoint)) return new Promise<void>(() => undefined);
    if (endpoint === 'discovery') return sendJson(res, 200, discovery());
    if (endpoint === 'jwks') return sendJson(res, 200, jwks());
    if (endpoint === 'authorize') return authorize(url.searchParams, res);
    return token(req, res);
  }, options.tls);
  issuer = server.url;

  return {
    url: server.url,
    issuer,
    clientId,
    clientSecret,
    requests,
    signInAs: (who) => {
      user = who;
    },
    mint: (claims, mintOptions = {}) => {
      const issuedAt = mintOptions.expired ? now() - 7200 : now();
      const payload = { iss: issuer, iat: issuedAt, exp: issuedAt + (mintOptions.expired ? 3600 : TOKEN_LIFETIME_S), ...claims };
      const signed = sign(payload, mintOptions.wrongKey ? newKey() : current, mintOptions.kid ?? current.kid);
      if (!mintOptions.tampered) return signed;
      const [header, , signature] = signed.split('.');
      const changed = Buffer.from(JSON.stringify({ ...payload, tampered: true })).toString('base64url');
      return `${header}.${changed}.${signature}`;
    },
    rotateKeys: ({ keepOld = false } = {}) => {
      retired = keepOld ? [current, ...retired] : [];
      current = newKey();
    },
    publicKeyPem: () => current.publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    stall: (endpoint, stall = true) => {
      if (stall) stalled.add(endpoint);
      else stalled.delete(endpoint);
    },
    close: () => server.close(),
  };
}
