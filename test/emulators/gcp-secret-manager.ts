/**
 * A Google Secret Manager emulator speaking the REST (JSON) form of the API, as the client
 * library's REST transport sends it. Every request carries a service account's self-signed JWT;
 * the emulator checks it as Google does: RS256 against the public key of the account's key named
 * by `kid`, issuer and subject the account, the cloud-platform scope (or the API as audience),
 * expiry; the account must be allowed on the project. It keeps secrets with labels, replication
 * and versions; errors are Google's `{error: {code, message, status}}`.
 */
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { FaultInjector, listenLocally, readBody, sendJson } from './http-server';
import { decodeJwt, verifyJwt } from './jwt';

export interface GcpSecret {
  project: string;
  id: string;
  labels: Record<string, string>;
  replication: unknown;
  /** Version payloads (decoded), oldest first; version n is index n-1. */
  versions: string[];
}

export interface GcpSecretManagerEmulator {
  url: string;
  /** Secrets by `projects/<project>/secrets/<id>`. */
  secrets: Map<string, GcpSecret>;
  /** A service account allowed on `project`; answers its key file (JSON), as the console hands it out. */
  serviceAccount(project: string): string;
  /** The latest version's payload of a secret. */
  value(project: string, id: string): string | undefined;
  calls: string[];
  /** Operations: `create-secret`, `add-version`, `delete-secret`. */
  failNext(operation: string, status: number, times?: number): void;
  close(): Promise<void>;
}

const CLOUD_PLATFORM = 'https://www.googleapis.com/auth/cloud-platform';
const API_AUDIENCE = /^https:\/\/secretmanager\.googleapis\.com\/?$/;
const SECRET_ID = /^[A-Za-z0-9_-]{1,255}$/;
const STATUS_NAMES: Record<number, string> = { 400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 409: 'ALREADY_EXISTS', 429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL', 503: 'UNAVAILABLE' };

interface AccountKey {
  email: string;
  publicKey: KeyObject;
  projects: Set<string>;
}

export async function startGcpSecretManagerEmulator(): Promise<GcpSecretManagerEmulator> {
  const secrets = new Map<string, GcpSecret>();
  const keys = new Map<string, AccountKey>();
  const calls: string[] = [];
  const faults = new FaultInjector();
  const googleError = (status: number, message: string) => ({ error: { code: status, message, status: STATUS_NAMES[status] ?? 'UNKNOWN' } });
  const fail = (res: ServerResponse, status: number, message: string) => sendJson(res, status, googleError(status, message));

  /** The account a request's bearer JWT proves, or why it proves none. */
  const authenticate = (authorization: string): AccountKey | string => {
    const token = /^Bearer (.+)$/.exec(authorization)?.[1];
    if (!token) return 'Request is missing required authentication credential.';
    const key = keys.get(String(decodeJwt(token)?.header.kid ?? ''));
    if (!key) return 'Invalid JWT: unknown key id.';
    const verified = verifyJwt(token, key.publicKey);
    if ('problem' in verified) return `Invalid JWT: ${verified.problem}.`;
    const { iss, sub, scope, aud } = verified.claims as { iss?: string; sub?: string; scope?: string; aud?: string };
    if (iss !== key.email || sub !== key.email) return 'Invalid JWT: issuer and subject must be the service account.';
    if (!(scope ?? '').split(' ').includes(CLOUD_PLATFORM) && !API_AUDIENCE.test(aud ?? '')) return 'Invalid JWT: neither the cloud-platform scope nor this API as audience.';
    return key;
  };

  const server = await listenLocally(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://emulator');
    calls.push(`${req.method} ${url.pathname}`);
    const body = await readBody(req);
    const account = authenticate(String(req.headers.authorization ?? ''));
    if (typeof account === 'string') return fail(res, 401, account);
    const match = /^\/v1\/projects\/([^/]+)\/secrets(?:\/([^/:]+))?(:addVersion)?$/.exec(url.pathname);
    if (!match) return fail(res, 404, `Path ${url.pathname} not found.`);
    const [, project, secretId, addVersion] = match.map((part) => (part === undefined ? part : decodeURIComponent(part)));
    const operation = req.method === 'POST' && !secretId ? 'create-secret' : req.method === 'POST' && addVersion ? 'add-version' : req.method === 'DELETE' && secretId && !addVersion ? 'delete-secret' : undefined;
    if (!operation) return fail(res, 404, `Method ${req.method} ${url.pathname} not found.`);
    if (!account.projects.has(project)) return fail(res, 403, `Permission 'secretmanager.secrets.${operation === 'delete-secret' ? 'delete' : 'create'}' denied for resource 'projects/${project}' (or it may not exist).`);
    const fault = faults.take(operation);
    if (fault) return sendJson(res, fault.status, fault.body);
    const input = JSON.parse(body.toString('utf8') || '{}') as Record<string, unknown>;

    if (operation === 'create-secret') {
      const id = url.searchParams.get('secretId') ?? '';
      if (!SECRET_ID.test(id)) return fail(res, 400, `Invalid secret id "${id}": it must be 1 to 255 letters, digits, '-' or '_'.`);
      const name = `projects/${project}/secrets/${id}`;
      if (secrets.has(name)) return fail(res, 409, `Secret [${name}] already exists.`);
      if (!input.replication) return fail(res, 400, 'Secret.replication is required.');
      const labels = (input.labels ?? {}) as Record<string, string>;
      const badLabel = Object.keys(labels).find((label) => !/^[a-z][a-z0-9_-]{0,62}$/.test(label));
      if (badLabel !== undefined) return fail(res, 400, `Invalid label key "${badLabel}".`);
      secrets.set(name, { project, id, labels, replication: input.replication, versions: [] });
      return sendJson(res, 200, { name, replication: input.replication, labels, createTime: new Date().toISOString() });
    }
    const name = `projects/${project}/secrets/${secretId}`;
    const secret = secrets.get(name);
    if (!secret) return fail(res, 404, `Secret [${name}] not found or has no versions.`);
    if (operation === 'delete-secret') {
      secrets.delete(name);
      return sendJson(res, 200, {});
    }
    const data = (input.payload as { data?: unknown } | undefined)?.data;
    if (typeof data !== 'string') return fail(res, 400, 'SecretVersion.payload.data is required.');
    secret.versions.push(Buffer.from(data, 'base64').toString('utf8'));
    return sendJson(res, 200, { name: `${name}/versions/${secret.versions.length}`, state: 'ENABLED', createTime: new Date().toISOString() });
  });

  return {
    url: server.url,
    secrets,
    serviceAccount: (project) => {
      const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const keyId = randomUUID().replace(/-/g, '');
      const email = `sync-${keyId.slice(0, 8)}@${project}.iam.gserviceaccount.com`;
      keys.set(keyId, { email, publicKey: pair.publicKey, projects: new Set([project]) });
      return JSON.stringify({
        type: 'service_account',
        project_id: project,
        private_key_id: keyId,
        private_key: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        client_email: email,
        client_id: keyId,
        // Anything asking this for an access token instead of signing its own JWT gets a 404.
        token_uri: `${server.url}/token`,
      });
    },
    value: (project, id) => secrets.get(`projects/${project}/secrets/${id}`)?.versions.at(-1),
    calls,
    failNext: (operation, status, times) => faults.failNext(operation, { status, body: googleError(status, `injected ${STATUS_NAMES[status] ?? status}`) }, times),
    close: server.close,
  };
}
