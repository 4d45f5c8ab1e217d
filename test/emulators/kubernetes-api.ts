/**
 * A Kubernetes API server, as much of it as an auth method that trusts service accounts talks to:
 * TokenReview (authentication.k8s.io/v1), and reading a namespace and a service account (core v1).
 * It holds namespaces (with labels) and service accounts, issues their tokens as projected
 * service-account tokens are issued (RS256 with its own key, `kubernetes.io` claims), and reviews
 * tokens truthfully: signature by its current key, lifetime, audiences, and the account still
 * existing. Callers authenticate with a bearer token of one of its accounts, for the API server's
 * own audience, and may do only what the account was granted; others get the API server's
 * `Status` answers (401 Unauthorized, 403 Forbidden).
 */
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { FaultInjector, listenLocally, readBody, sendJson } from './http-server';
import { decodeJwt, signJwt, verifyJwt } from './jwt';

/** What an account may do at the API server (its RBAC grants, reduced to the requests served here). */
export type ApiPermission = 'create tokenreviews' | 'get namespaces' | 'get serviceaccounts';

/** The requests served, by the name faults are injected under. */
export type ApiOperation = 'tokenreviews' | 'namespaces' | 'serviceaccounts';

export interface KubernetesServiceAccount {
  namespace: string;
  name: string;
  uid: string;
  annotations: Record<string, string>;
  permissions: Set<ApiPermission>;
}

export interface ServiceAccountOptions {
  annotations?: Record<string, string>;
  permissions?: ApiPermission[];
}

export interface TokenOptions {
  /** The token's `aud`; default the API server's own audience (what a pod's default token has). */
  audiences?: string[];
  /** Seconds from now to `exp`; negative for a token that has expired. Default an hour. */
  expiresIn?: number;
}

export interface KubernetesApiEmulator {
  /** The API server's base URL (https://127.0.0.1:port), what `kubernetes_host` is set to. */
  url: string;
  /** `iss` of its tokens, and the audience it accepts callers' tokens for. */
  issuer: string;
  /** PEM of the public key its tokens are signed with now. */
  publicKeyPem(): string;
  /** Adds a namespace, or replaces the labels of one. */
  addNamespace(name: string, labels?: Record<string, string>): void;
  /** Adds a service account (and its namespace when there is none). */
  addServiceAccount(namespace: string, name: string, options?: ServiceAccountOptions): KubernetesServiceAccount;
  /** Deletes a service account: its tokens fail reviews from then on. */
  deleteServiceAccount(namespace: string, name: string): void;
  /** A token of the account, as the kubelet projects one into a pod. */
  issueToken(namespace: string, name: string, options?: TokenOptions): string;
  /** Signs with a new key from now on; tokens signed with the old one no longer authenticate. */
  rotateKey(): void;
  /** Every request as `METHOD /path`, in order. */
  calls: string[];
  /** The next `times` requests of `operation` (from callers it would serve) answer this status. */
  failNext(operation: ApiOperation, status: number, message: string, times?: number): void;
  close(): Promise<void>;
}

const TOKEN_LIFETIME_S = 3600;
const DEFAULT_ISSUER = 'https://kubernetes.default.svc.cluster.local';

/** The API server's error object. */
function status(code: number, reason: string, message: string): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

const accountKey = (namespace: string, name: string) => `${namespace}/${name}`;
const username = (account: KubernetesServiceAccount) => `system:serviceaccount:${account.namespace}:${account.name}`;

interface Route {
  operation: ApiOperation;
  permission: ApiPermission;
  /** The resource as the API server's refusals name it. */
  resource: string;
  namespace: string;
  accountName?: string;
}

/** The request a method and path make, of those served; undefined for any other. */
function routeOf(method: string, pathname: string): Route | undefined {
  if (method === 'POST' && pathname === '/apis/authentication.k8s.io/v1/tokenreviews') {
    return { operation: 'tokenreviews', permission: 'create tokenreviews', resource: 'tokenreviews.authentication.k8s.io', namespace: '' };
  }
  const match = /^\/api\/v1\/namespaces\/([^/]+)(?:\/serviceaccounts\/([^/]+))?$/.exec(pathname);
  if (method !== 'GET' || !match) return undefined;
  const [namespace, accountName] = [decodeURIComponent(match[1]), match[2] === undefined ? undefined : decodeURIComponent(match[2])];
  return accountName === undefined
    ? { operation: 'namespaces', permission: 'get namespaces', resource: `namespaces "${namespace}"`, namespace }
    : { operation: 'serviceaccounts', permission: 'get serviceaccounts', resource: `serviceaccounts "${accountName}"`, namespace, accountName };
}

interface TokenClaims {
  aud: string[];
  'kubernetes.io'?: { namespace?: string; serviceaccount?: { name?: string; uid?: string } };
}

/**
 * Starts the API server over TLS with `tls` (a certificate for 127.0.0.1 and its key, PEM files),
 * so a client must trust the CA that issued it.
 */
export async function startKubernetesApi(tls: { cert: string; key: string }, { issuer = DEFAULT_ISSUER }: { issuer?: string } = {}): Promise<KubernetesApiEmulator> {
  const namespaces = new Map<string, { uid: string; labels: Record<string, string> }>();
  const accounts = new Map<string, KubernetesServiceAccount>();
  const calls: string[] = [];
  const faults = new FaultInjector();
  let signing: { privateKey: KeyObject; publicKey: KeyObject; kid: string } = newKey();

  function newKey() {
    return { ...generateKeyPairSync('rsa', { modulusLength: 2048 }), kid: randomUUID() };
  }

  const addNamespace = (name: string, labels: Record<string, string> = {}) => {
    namespaces.set(name, { uid: namespaces.get(name)?.uid ?? randomUUID(), labels });
  };

  /** The account a token authenticates, against the audiences a request is for; otherwise why not. */
  function authenticate(token: string, audiences: string[]): { account: KubernetesServiceAccount; audiences: string[] } | { problem: string } {
    const verified = verifyJwt(token, signing.publicKey);
    if ('problem' in verified) return { problem: verified.problem === 'token expired' ? 'service account token has expired' : 'invalid bearer token' };
    const claims = verified.claims as unknown as TokenClaims;
    if (verified.claims.iss !== issuer) return { problem: 'invalid bearer token' };
    const granted = (Array.isArray(claims.aud) ? claims.aud : [claims.aud]).filter((audience) => audiences.includes(audience));
    if (granted.length === 0) return { problem: `token audiences ${JSON.stringify(claims.aud)} is invalid for the target audiences ${JSON.stringify(audiences)}` };
    const identity = claims['kubernetes.io'];
    const account = accounts.get(accountKey(identity?.namespace ?? '', identity?.serviceaccount?.name ?? ''));
    if (!account || account.uid !== identity?.serviceaccount?.uid) return { problem: 'service account has been deleted' };
    return { account, audiences: granted };
  }

  /** The calling account, if its bearer token is good and it holds `permission`; otherwise the answer has been sent. */
  function caller(authorization: string | undefined, res: ServerResponse, permission: ApiPermission, resource: string): boolean {
    const bearer = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
    const authenticated = bearer === undefined ? undefined : authenticate(bearer, [issuer]);
    if (!authenticated || 'problem' in authenticated) {
      sendJson(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
      return false;
    }
    if (!authenticated.account.permissions.has(permission)) {
      const [verb, kind] = permission.split(' ');
      sendJson(res, 403, status(403, 'Forbidden', `${resource} is forbidden: User "${username(authenticated.account)}" cannot ${verb} resource "${kind}"`));
      return false;
    }
    return true;
  }

  function review(res: ServerResponse, body: Buffer): void {
    let request: { apiVersion?: string; kind?: string; spec?: { token?: unknown; audiences?: unknown } };
    try {
      request = JSON.parse(body.toString('utf8'));
    } catch {
      return sendJson(res, 400, status(400, 'BadRequest', 'the body of the request was in an unknown format'));
    }
    const { spec } = request;
    if (request.kind !== 'TokenReview' || typeof spec?.token !== 'string') return sendJson(res, 400, status(400, 'BadRequest', 'TokenReview spec.token: Required value'));
    const audiences = Array.isArray(spec.audiences) && spec.audiences.length > 0 ? (spec.audiences as string[]) : [issuer];
    const result = authenticate(spec.token, audiences);
    const reviewed =
      'problem' in result
        ? { authenticated: false, user: {}, error: `[invalid bearer token, ${result.problem}]` }
        : {
            authenticated: true,
            user: { username: username(result.account), uid: result.account.uid, groups: ['system:serviceaccounts', `system:serviceaccounts:${result.account.namespace}`, 'system:authenticated'] },
            audiences: result.audiences,
          };
    // As the API server does, the answer repeats the request's spec, token included.
    sendJson(res, 201, { kind: 'TokenReview', apiVersion: 'authentication.k8s.io/v1', metadata: { creationTimestamp: null }, spec, status: reviewed });
  }

  const server = await listenLocally(async (req, res) => {
    const url = new URL(req.url ?? '/', 'https://emulator');
    calls.push(`${req.method} ${url.pathname}`);
    const body = await readBody(req);
    const route = routeOf(req.method ?? '', url.pathname);
    if (!route) return sendJson(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
    if (!caller(req.headers.authorization, res, route.permission, route.resource)) return;
    const fault = faults.take(route.operation);
    if (fault) return sendJson(res, fault.status, fault.body);
    if (route.operation === 'tokenreviews') return review(res, body);

    const { namespace, accountName } = route;
    const found = namespaces.get(namespace);
    if (accountName === undefined) {
      if (!found) return sendJson(res, 404, status(404, 'NotFound', `namespaces "${namespace}" not found`));
      return sendJson(res, 200, {
        kind: 'Namespace',
        apiVersion: 'v1',
        metadata: { name: namespace, uid: found.uid, labels: { ...found.labels, 'kubernetes.io/metadata.name': namespace } },
        spec: { finalizers: ['kubernetes'] },
        status: { phase: 'Active' },
      });
    }
    const account = accounts.get(accountKey(namespace, accountName));
    if (!account) return sendJson(res, 404, status(404, 'NotFound', `serviceaccounts "${accountName}" not found`));
    return sendJson(res, 200, { kind: 'ServiceAccount', apiVersion: 'v1', metadata: { name: account.name, namespace: account.namespace, uid: account.uid, annotations: account.annotations } });
  }, tls);

  return {
    url: server.url,
    issuer,
    publicKeyPem: () => signing.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    addNamespace,
    addServiceAccount: (namespace, name, { annotations = {}, permissions = [] } = {}) => {
      if (!namespaces.has(namespace)) addNamespace(namespace);
      const account: KubernetesServiceAccount = { namespace, name, uid: randomUUID(), annotations, permissions: new Set(permissions) };
      accounts.set(accountKey(namespace, name), account);
      return account;
    },
    deleteServiceAccount: (namespace, name) => {
      accounts.delete(accountKey(namespace, name));
    },
    issueToken: (namespace, name, { audiences = [issuer], expiresIn = TOKEN_LIFETIME_S } = {}) => {
      const account = accounts.get(accountKey(namespace, name));
      if (!account) throw new Error(`no service account ${namespace}/${name}`);
      const now = Math.floor(Date.now() / 1000);
      const issuedAt = expiresIn > 0 ? now : now + expiresIn - TOKEN_LIFETIME_S;
      return signJwt(
        {
          aud: audiences,
          exp: now + expiresIn,
          iat: issuedAt,
          nbf: issuedAt,
          iss: issuer,
          sub: username(account),
          'kubernetes.io': { namespace, serviceaccount: { name, uid: account.uid } },
        },
        signing.privateKey,
        { kid: signing.kid },
      );
    },
    rotateKey: () => {
      signing = newKey();
    },
    calls,
    failNext: (operation, code, message, times) => faults.failNext(operation, { status: code, body: status(code, code >= 500 ? 'InternalError' : 'BadRequest', message) }, times),
    close: server.close,
  };
}

/** The token with its claims changed by `edit` and its signature kept: a forgery no key verifies. */
export function tamperedToken(token: string, edit: (claims: Record<string, unknown>) => void): string {
  const [header, , signature] = token.split('.');
  const claims = decodeJwt(token)?.payload ?? {};
  edit(claims);
  return [header, Buffer.from(JSON.stringify(claims)).toString('base64url'), signature].join('.');
}
