import { readFile } from 'node:fs/promises';
import { wrapKeyForImport } from './key-wrap';
import type { AuthBlock, ClientCalls, Envelope, TokenInfo, WrapInfo } from './types';
import { keepRenewing, type RenewalEnd } from './renewal';
import { cloudIamLoginData, type CloudIamLoginOptions } from './cloud-login';

/** The answer's data, or an error naming the path when there is none. */
function dataOf<T>(envelope: Envelope | null, path: string): T {
  if (!envelope?.data) throw new Error(`${path} answered without data`);
  return envelope.data as T;
}

/** Where Kubernetes mounts a pod's service-account token. */
export const POD_SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

function authOf(envelope: Envelope | null, path: string): AuthBlock {
  if (!envelope?.auth) throw new Error(`${path} answered without a token`);
  return envelope.auth;
}

export interface KvVersionMetadata {
  created_time: string;
  deletion_time: string;
  destroyed: boolean;
  version: number;
  custom_metadata: Record<string, string> | null;
}

/** A kv version 2 secret's metadata, as `<mount>/metadata/<path>` reads it. */
export interface KvMetadata {
  current_version: number;
  oldest_version: number;
  max_versions: number;
  cas_required: boolean;
  /** A duration ("0s" for never). */
  delete_version_after: string;
  created_time: string;
  updated_time: string;
  custom_metadata: Record<string, string> | null;
  /** Version number → its state. */
  versions: Record<string, Omit<KvVersionMetadata, 'version' | 'custom_metadata'>>;
}

export interface KvSecret<T> {
  data: T;
  metadata: KvVersionMetadata;
}

/** A kv version 2 engine at `mount`: versions with check-and-set, soft delete, metadata. */
export class KvV2 {
  constructor(
    private readonly client: ClientCalls,
    readonly mount: string,
  ) {}

  /** The latest version (or `version`); null when there is none, or it is deleted or destroyed. */
  async get<T = Record<string, unknown>>(path: string, version?: number): Promise<KvSecret<T> | null> {
    const answer = await this.client.read(`${this.mount}/data/${path}`, version === undefined ? undefined : { version });
    const secret = answer?.data as { data: T | null; metadata: KvVersionMetadata } | undefined;
    return secret?.data ? { data: secret.data, metadata: secret.metadata } : null;
  }

  /** Writes a new version; with `cas`, only if the current version is `cas` (0: only if none). */
  async put(path: string, data: Record<string, unknown>, cas?: number): Promise<KvVersionMetadata> {
    const where = `${this.mount}/data/${path}`;
    return dataOf(await this.client.write(where, { data, ...(cas !== undefined && { options: { cas } }) }), where);
  }

  /** Merges `data` into the latest version as a new version. */
  async patch(path: string, data: Record<string, unknown>): Promise<KvVersionMetadata> {
    const where = `${this.mount}/data/${path}`;
    return dataOf(await this.client.patch(where, { data }), where);
  }

  async list(path = ''): Promise<string[]> {
    return ((await this.client.list(`${this.mount}/metadata/${path}`))?.data?.keys as string[] | undefined) ?? [];
  }

  /** Soft-deletes the latest version, or the given versions. */
  async delete(path: string, versions?: number[]): Promise<void> {
    if (versions) await this.client.write(`${this.mount}/delete/${path}`, { versions });
    else await this.client.delete(`${this.mount}/data/${path}`);
  }

  async undelete(path: string, versions: number[]): Promise<void> {
    await this.client.write(`${this.mount}/undelete/${path}`, { versions });
  }

  async destroy(path: string, versions: number[]): Promise<void> {
    await this.client.write(`${this.mount}/destroy/${path}`, { versions });
  }

  /** The secret's metadata and its versions; null when there is no secret at `path`. */
  async metadata(path: string): Promise<KvMetadata | null> {
    return ((await this.client.read(`${this.mount}/metadata/${path}`))?.data as KvMetadata | undefined) ?? null;
  }

  /** Deletes every version and the metadata. */
  async deleteAll(path: string): Promise<void> {
    await this.client.delete(`${this.mount}/metadata/${path}`);
  }
}

/** A transit engine at `mount`: named keys, encryption, rewrapping after rotation. */
export class Transit {
  constructor(
    private readonly client: ClientCalls,
    readonly mount: string,
  ) {}

  async createKey(name: string, options: { type?: string; exportable?: boolean; derived?: boolean } = {}): Promise<void> {
    await this.client.write(`${this.mount}/keys/${name}`, options);
  }

  async rotate(name: string): Promise<void> {
    await this.client.write(`${this.mount}/keys/${name}/rotate`);
  }

  /** The mount's import wrapping key (PEM of a 4096-bit RSA public key). */
  async wrappingKey(): Promise<string> {
    const where = `${this.mount}/wrapping_key`;
    return dataOf<{ public_key: string }>(await this.client.read(where), where).public_key;
  }

  /**
   * Imports key material (raw bytes of a symmetric key, PKCS#8 DER of a private key) as the new key
   * `name`, wrapped for the mount's wrapping key so it never travels in the clear; `options` are the
   * import endpoint's other fields (`type`, `exportable`, `allow_rotation`, ...).
   */
  async importKey(name: string, material: Uint8Array, options: Record<string, unknown> = {}): Promise<Envelope | null> {
    return this.sendImport(`${this.mount}/keys/${name}/import`, material, options);
  }

  /** Imports key material as a new version of the imported key `name` (or `options.version`). */
  async importKeyVersion(name: string, material: Uint8Array, options: Record<string, unknown> = {}): Promise<Envelope | null> {
    return this.sendImport(`${this.mount}/keys/${name}/import_version`, material, options);
  }

  private async sendImport(where: string, material: Uint8Array, options: Record<string, unknown>): Promise<Envelope | null> {
    const ciphertext = wrapKeyForImport(await this.wrappingKey(), material);
    return this.client.write(where, { ...options, ciphertext, hash_function: 'SHA256' });
  }

  /** Encrypts bytes (or UTF-8 text); returns `svc:v<n>:...`. */
  async encrypt(key: string, plaintext: Uint8Array | string, context?: Uint8Array): Promise<string> {
    const where = `${this.mount}/encrypt/${key}`;
    const body = { plaintext: Buffer.from(plaintext).toString('base64'), ...(context && { context: Buffer.from(context).toString('base64') }) };
    return dataOf<{ ciphertext: string }>(await this.client.write(where, body), where).ciphertext;
  }

  /** Decrypts `svc:v<n>:...` (or Vault's `vault:v<n>:...`) back to bytes. */
  async decrypt(key: string, ciphertext: string, context?: Uint8Array): Promise<Buffer> {
    const where = `${this.mount}/decrypt/${key}`;
    const body = { ciphertext, ...(context && { context: Buffer.from(context).toString('base64') }) };
    return Buffer.from(dataOf<{ plaintext: string }>(await this.client.write(where, body), where).plaintext, 'base64');
  }

  /** Re-encrypts under the key's latest version without revealing the plaintext. */
  async rewrap(key: string, ciphertext: string): Promise<string> {
    const where = `${this.mount}/rewrap/${key}`;
    return dataOf<{ ciphertext: string }>(await this.client.write(where, { ciphertext }), where).ciphertext;
  }
}

export interface TokenCreateRequest {
  policies?: string[];
  ttl?: string;
  explicit_max_ttl?: string;
  period?: string;
  renewable?: boolean;
  no_parent?: boolean;
  no_default_policy?: boolean;
  display_name?: string;
  meta?: Record<string, string>;
  num_uses?: number;
  type?: 'service' | 'batch';
}

/** The token store (auth/token). */
export class Tokens {
  constructor(private readonly client: ClientCalls) {}

  async create(request: TokenCreateRequest = {}, role?: string): Promise<AuthBlock> {
    const where = role ? `auth/token/create/${role}` : 'auth/token/create';
    return authOf(await this.client.write(where, { ...request }), where);
  }

  async lookupSelf(): Promise<TokenInfo> {
    return dataOf(await this.client.read('auth/token/lookup-self'), 'auth/token/lookup-self');
  }

  async lookup(token: string): Promise<TokenInfo> {
    return dataOf(await this.client.write('auth/token/lookup', { token }), 'auth/token/lookup');
  }

  async renewSelf(increment?: string): Promise<AuthBlock> {
    return authOf(await this.client.write('auth/token/renew-self', increment ? { increment } : {}), 'auth/token/renew-self');
  }

  async revoke(token: string): Promise<void> {
    await this.client.write('auth/token/revoke', { token });
  }

  async revokeSelf(): Promise<void> {
    await this.client.write('auth/token/revoke-self');
  }

  /**
   * Keeps the client's own token alive: renews it (renew-self) when two thirds of its TTL have
   * passed, until `stop()`, or until a renewal fails or grants no more time (the token reached its
   * max TTL: log in again), which `onEnd` hears. A token without a TTL (root) needs none: `onEnd`
   * hears 'max-ttl' at once.
   */
  async keepRenewed(onEnd: (reason: RenewalEnd) => void = () => {}): Promise<{ stop(): void }> {
    const { ttl, renewable } = await this.lookupSelf();
    if (ttl <= 0 || !renewable) {
      onEnd('max-ttl');
      return { stop: () => {} };
    }
    return keepRenewing(async () => (await this.renewSelf()).lease_duration, ttl, onEnd);
  }
}

/** Logins: each returns the token, and `client.withToken(auth.client_token)` acts as it. */
export class Logins {
  constructor(private readonly client: ClientCalls) {}

  userpass(username: string, password: string, mount = 'userpass'): Promise<AuthBlock> {
    return this.login(`auth/${mount}/login/${encodeURIComponent(username)}`, { password });
  }

  approle(roleId: string, secretId?: string, mount = 'approle'): Promise<AuthBlock> {
    return this.login(`auth/${mount}/login`, { role_id: roleId, ...(secretId !== undefined && { secret_id: secretId }) });
  }

  /** A Kubernetes workload with its service-account token. */
  kubernetes(role: string, jwt: string, mount = 'kubernetes'): Promise<AuthBlock> {
    return this.login(`auth/${mount}/login`, { role, jwt: jwt.trim() });
  }

  /** A Kubernetes workload from inside its pod: the token is read from the pod's service-account file (rotated by the kubelet, so read at each login). */
  async kubernetesInPod(role: string, mount = 'kubernetes', tokenFile = POD_SERVICE_ACCOUNT_TOKEN): Promise<AuthBlock> {
    return this.kubernetes(role, await readFile(tokenFile, 'utf8'), mount);
  }

  /** A JWT from an identity provider (a CI pipeline's OIDC token, say); without a role, the mount's default_role. */
  jwt(jwt: string, role?: string, mount = 'jwt'): Promise<AuthBlock> {
    return this.login(`auth/${mount}/login`, { jwt: jwt.trim(), ...(role !== undefined && { role }) });
  }

  /**
   * The first half of an OIDC login: the provider's URL to send the person to. The provider sends
   * them back to `redirectUri` with `state` and `code`, which `oidcCallback` turns into a token.
   */
  async oidcAuthUrl(redirectUri: string, options: { role?: string; clientNonce?: string; mount?: string } = {}): Promise<string> {
    const path = `auth/${options.mount ?? 'oidc'}/oidc/auth_url`;
    const answer = await this.client.withToken(undefined).write(path, {
      redirect_uri: redirectUri,
      ...(options.role !== undefined && { role: options.role }),
      ...(options.clientNonce !== undefined && { client_nonce: options.clientNonce }),
    });
    const url = answer?.data?.auth_url;
    if (typeof url !== 'string' || url === '') throw new Error(`${path} answered no auth_url (is the redirect URI allowed by the role?)`);
    return url;
  }

  /** The second half of an OIDC login: what the provider sent back to the redirect URI. */
  async oidcCallback(state: string, code: string, options: { clientNonce?: string; mount?: string } = {}): Promise<AuthBlock> {
    const path = `auth/${options.mount ?? 'oidc'}/oidc/callback`;
    const query = { state, code, ...(options.clientNonce !== undefined && { client_nonce: options.clientNonce }) };
    return authOf(await this.client.withToken(undefined).read(path, query), path);
  }

  /** The cloud method's iam login: an sts:GetCallerIdentity request signed with the caller's credentials. */
  async cloud(options: CloudIamLoginOptions & { role?: string; mount?: string }): Promise<AuthBlock> {
    const { role, mount = 'cloud', ...signing } = options;
    return this.login(`auth/${mount}/login`, { ...(await cloudIamLoginData(signing)), ...(role !== undefined && { role }) });
  }

  /** Any auth method's login path with its fields. */
  async login(path: string, fields: Record<string, unknown>): Promise<AuthBlock> {
    return authOf(await this.client.withToken(undefined).write(path, fields), path);
  }
}

export interface LeaseInfo {
  id: string;
  issue_time: string;
  expire_time: string | null;
  last_renewal: string | null;
  renewable: boolean;
  ttl: number;
}

/** Leases of dynamic secrets: look up, renew (once or kept renewed), revoke. */
export class Leases {
  constructor(private readonly client: ClientCalls) {}

  async lookup(leaseId: string): Promise<LeaseInfo> {
    return dataOf(await this.client.write('sys/leases/lookup', { lease_id: leaseId }), 'sys/leases/lookup');
  }

  /** Renews; the answer's `lease_duration` is the TTL granted from now. */
  async renew(leaseId: string, incrementSeconds?: number): Promise<Envelope> {
    const answer = await this.client.write('sys/leases/renew', { lease_id: leaseId, ...(incrementSeconds !== undefined && { increment: incrementSeconds }) });
    if (!answer) throw new Error('sys/leases/renew answered nothing');
    return answer;
  }

  async revoke(leaseId: string): Promise<void> {
    await this.client.write('sys/leases/revoke', { lease_id: leaseId });
  }

  /**
   * Keeps a lease renewed: renews when two thirds of the granted TTL have passed, until `stop()` or
   * until a renewal fails or grants no more time (the lease reached its max TTL), which `onEnd` hears.
   */
  keepRenewed(leaseId: string, ttlSeconds: number, onEnd: (reason: RenewalEnd) => void = () => {}): { stop(): void } {
    return keepRenewing(async () => (await this.renew(leaseId, ttlSeconds)).lease_duration, ttlSeconds, onEnd);
  }
}

/** Response wrapping: hand data over through a single-use token. */
export class Wrapping {
  constructor(private readonly client: ClientCalls) {}

  async wrap(data: Record<string, unknown>, ttl: string): Promise<WrapInfo> {
    const answer = await this.client.withOptions({ wrapTtl: ttl }).write('sys/wrapping/wrap', data);
    if (!answer?.wrap_info) throw new Error('sys/wrapping/wrap answered without a wrapping token');
    return answer.wrap_info;
  }

  /** What the token wrapped (the token is spent). */
  async unwrap(token: string): Promise<Envelope> {
    const answer = await this.client.write('sys/wrapping/unwrap', { token });
    if (!answer) throw new Error('sys/wrapping/unwrap answered nothing');
    return answer;
  }

  async lookup(token: string): Promise<Record<string, unknown>> {
    return dataOf(await this.client.write('sys/wrapping/lookup', { token }), 'sys/wrapping/lookup');
  }
}

export interface DatabaseCredentials {
  username: string;
  password: string;
  leaseId: string;
  leaseDuration: number;
  renewable: boolean;
}

/** A database engine at `mount`: dynamic credentials with their lease. */
export class Database {
  constructor(
    private readonly client: ClientCalls,
    readonly mount: string,
  ) {}

  async credentials(role: string): Promise<DatabaseCredentials> {
    const where = `${this.mount}/creds/${role}`;
    const answer = await this.client.read(where);
    const { username, password } = dataOf<{ username: string; password: string }>(answer, where);
    return { username, password, leaseId: answer!.lease_id, leaseDuration: answer!.lease_duration, renewable: answer!.renewable };
  }
}
