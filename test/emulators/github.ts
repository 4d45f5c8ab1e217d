/**
 * A code host (GitHub REST) emulator for repository Actions secrets: per-repository X25519 key
 * pairs, values accepted only as libsodium sealed boxes to the repository's current key (the
 * emulator opens them, so tests assert the plaintext that arrived), tokens checked as the API
 * does (`token X` or `Bearer X`; unknown → 401 "Bad credentials", no access → 403).
 */
import sodium from 'libsodium-wrappers';
import { FaultInjector, listenLocally, readBody, sendJson } from './http-server';

export interface RepositorySecret {
  value: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface Repository {
  owner: string;
  name: string;
  keyId: string;
  publicKey: Uint8Array;
  privateKey: Uint8Array;
  secrets: Map<string, RepositorySecret>;
}

export interface GithubEmulator {
  /** API base URL (what a client's baseUrl is set to). */
  url: string;
  repositories: Map<string, Repository>;
  /** Token → `owner/name` of the repositories it may manage. */
  tokens: Map<string, Set<string>>;
  addRepository(owner: string, name: string): Repository;
  /** Replaces a repository's key pair, as GitHub does from time to time. */
  rotateKey(owner: string, name: string): void;
  /** The decrypted value a repository holds under `secret`. */
  secret(owner: string, name: string, secret: string): string | undefined;
  /** Every request as `METHOD /path`, in order. */
  calls: string[];
  /** Operations: `get-public-key`, `put-secret`, `delete-secret`. */
  failNext(operation: string, status: number, message: string, times?: number): void;
  close(): Promise<void>;
}

const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export async function startGithubEmulator(): Promise<GithubEmulator> {
  await sodium.ready;
  const repositories = new Map<string, Repository>();
  const tokens = new Map<string, Set<string>>();
  const calls: string[] = [];
  const faults = new FaultInjector();
  let keyCounter = 0;

  const newKeys = () => {
    const pair = sodium.crypto_box_keypair();
    return { keyId: String(++keyCounter).padStart(20, '0'), publicKey: pair.publicKey, privateKey: pair.privateKey };
  };
  const addRepository = (owner: string, name: string): Repository => {
    const repository: Repository = { owner, name, ...newKeys(), secrets: new Map() };
    repositories.set(`${owner}/${name}`, repository);
    return repository;
  };

  const server = await listenLocally(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://emulator');
    calls.push(`${req.method} ${url.pathname}`);
    const body = await readBody(req);
    const credential = /^(?:token|bearer) (.+)$/i.exec(String(req.headers.authorization ?? ''))?.[1];
    const allowed = credential === undefined ? undefined : tokens.get(credential);
    if (!allowed) return sendJson(res, 401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' });
    const match = /^\/repos\/([^/]+)\/([^/]+)\/actions\/secrets\/([^/]+)$/.exec(url.pathname);
    if (!match) return sendJson(res, 404, { message: 'Not Found' });
    const [, owner, repo, secretName] = match.map(decodeURIComponent);
    const repository = repositories.get(`${owner}/${repo}`);
    if (!repository) return sendJson(res, 404, { message: 'Not Found' });
    if (!allowed.has(`${owner}/${repo}`)) return sendJson(res, 403, { message: 'Resource not accessible by personal access token' });
    const operation = secretName === 'public-key' && req.method === 'GET' ? 'get-public-key' : req.method === 'PUT' ? 'put-secret' : req.method === 'DELETE' ? 'delete-secret' : 'get-secret';
    const fault = faults.take(operation);
    if (fault) return sendJson(res, fault.status, fault.body);

    if (operation === 'get-public-key') return sendJson(res, 200, { key_id: repository.keyId, key: sodium.to_base64(repository.publicKey, sodium.base64_variants.ORIGINAL) });
    const existing = repository.secrets.get(secretName.toUpperCase());
    if (operation === 'get-secret') {
      return existing ? sendJson(res, 200, { name: secretName.toUpperCase(), created_at: existing.createdAt, updated_at: existing.updatedAt }) : sendJson(res, 404, { message: 'Not Found' });
    }
    if (operation === 'delete-secret') {
      if (!existing) return sendJson(res, 404, { message: 'Not Found' });
      repository.secrets.delete(secretName.toUpperCase());
      res.writeHead(204).end();
      return;
    }
    if (!SECRET_NAME.test(secretName) || /^GITHUB_/i.test(secretName)) return sendJson(res, 422, { message: 'Secret names can only contain alphanumeric characters ([a-z], [A-Z], [0-9]) or underscores (_).' });
    const payload = JSON.parse(body.toString('utf8') || '{}') as { encrypted_value?: string; key_id?: string };
    if (payload.key_id !== repository.keyId) return sendJson(res, 422, { message: 'Bad request - key_id is not the repository\'s current key' });
    let value: string;
    try {
      const sealed = sodium.from_base64(payload.encrypted_value ?? '', sodium.base64_variants.ORIGINAL);
      value = sodium.to_string(sodium.crypto_box_seal_open(sealed, repository.publicKey, repository.privateKey));
    } catch {
      return sendJson(res, 422, { message: 'Bad request - encrypted_value could not be decrypted with the repository key' });
    }
    const now = new Date();
    repository.secrets.set(secretName.toUpperCase(), { value, createdAt: existing?.createdAt ?? now, updatedAt: now });
    res.writeHead(existing ? 204 : 201).end();
  });

  return {
    url: server.url,
    repositories,
    tokens,
    addRepository,
    rotateKey: (owner, name) => {
      const repository = repositories.get(`${owner}/${name}`);
      if (repository) Object.assign(repository, newKeys());
    },
    secret: (owner, name, secret) => repositories.get(`${owner}/${name}`)?.secrets.get(secret)?.value,
    calls,
    failNext: (operation, status, message, times) => faults.failNext(operation, { status, body: { message } }, times),
    close: server.close,
  };
}
