/**
 * An Azure Key Vault emulator with its directory (Azure AD, `azure/directory.ts`) on the same base
 * URL, over TLS as the SDK requires for bearer tokens. The vault answers a request without
 * a token with the 401 challenge naming the directory and resource, checks every token (signature,
 * audience, tenant, expiry), and keeps what Key Vault keeps: secrets by name with versions and
 * tags, soft delete, recovery and purge (refused under purge protection).
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { FaultInjector, listenLocally, readBody, sendJson } from './http-server';
import { createAzureDirectory } from './azure/directory';

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
  const directory = createAzureDirectory([VAULT_RESOURCE], tenantId);
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

  const vault = async (res: ServerResponse, method: string, url: URL, authorization: string, body: Buffer) => {
    const challenge = { 'www-authenticate': `Bearer authorization="${base}/${tenantId}", resource="${VAULT_RESOURCE}"` };
    const token = /^Bearer (.+)$/.exec(authorization)?.[1];
    if (!token) return sendJson(res, 401, { error: { code: 'Unauthorized', message: 'AKV10000: Request is missing a Bearer or PoP token.' } }, challenge);
    const verified = directory.verify(token, VAULT_RESOURCE);
    if ('problem' in verified) return sendJson(res, 401, { error: { code: 'Unauthorized', message: `AKV10032: Invalid token: ${verified.problem}.` } }, challenge);
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
    // The directory names itself as the client reached it (directly, or through a test's proxy), as its clients check.
    directory.handle(res, req.method ?? 'GET', url.pathname, new URLSearchParams(body.toString('utf8')), `https://${req.headers.host ?? new URL(base).host}`);
  }, tls);
  base = server.url;

  return {
    url: server.url,
    tenantId,
    apps: directory.apps,
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
      operation === 'token' ? directory.failNext(status, code, times) : faults.failNext(operation, { status, body: { error: { code, message: code } } }, times),
    close: server.close,
  };
}
