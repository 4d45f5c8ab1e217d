/**
 * A Google Cloud Storage emulator at the wire level (JSON API), for what snapshot targets do:
 * multipart uploads, listing by prefix with pages, media download and delete. Every request must carry a
 * service account's self-signed RS256 JWT (`Authorization: Bearer`, the key named by `kid`, issuer
 * and subject its email, a storage scope, unexpired), checked against that account's public key as
 * Google does; anything else is a 401 in Google's error shape.
 *
 * `buckets` is what the provider holds; `pageSize` makes listings span several pages.
 */
import { createHash, generateKeyPairSync, randomBytes, verify, type KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenLocally, readBody, sendJson } from '../http-server';

export interface StoredObject {
  data: Buffer;
  contentType: string;
  generation: number;
  updated: Date;
}

export interface ServiceAccountKeyFile {
  type: 'service_account';
  project_id: string;
  private_key_id: string;
  private_key: string;
  client_email: string;
  client_id: string;
  token_uri: string;
}

export interface GcsEmulator {
  /** What a client's apiEndpoint is set to. */
  url: string;
  /** Bucket → object name → object. */
  buckets: Map<string, Map<string, StoredObject>>;
  /** A service account the emulator trusts, as the key file Google hands out. */
  createServiceAccount(name: string): ServiceAccountKeyFile;
  /** Most objects one listing page holds. */
  pageSize: number;
  /** Every request as `METHOD /path` (no query), in order. */
  calls: string[];
  close(): Promise<void>;
}

const PROJECT = 'emulated-project';
/** Scopes that allow writing objects. */
const WRITE_SCOPES = ['https://www.googleapis.com/auth/devstorage.read_write', 'https://www.googleapis.com/auth/devstorage.full_control', 'https://www.googleapis.com/auth/cloud-platform'];
/** Google accepts tokens issued at most this far in the future (clock skew). */
const MAX_SKEW_S = 300;

class GcsError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

const unauthorized = (message: string) => new GcsError(401, 'authError', `Invalid Credentials: ${message}`);

/** CRC32C (Castagnoli), which GCS reports for every object, big-endian base64. */
const CRC32C_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32c(data: Buffer): string {
  let crc = 0xffffffff;
  for (const byte of data) crc = CRC32C_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  const out = Buffer.alloc(4);
  out.writeUInt32BE((crc ^ 0xffffffff) >>> 0);
  return out.toString('base64');
}

/** The hashes GCS reports for an object's data, base64 as in its JSON and `X-Goog-Hash`. */
function hashes(data: Buffer): { crc32c: string; md5: string } {
  return { crc32c: crc32c(data), md5: createHash('md5').update(data).digest('base64') };
}

export async function startGcsEmulator(): Promise<GcsEmulator> {
  const buckets = new Map<string, Map<string, StoredObject>>();
  /** private_key_id → the account's email and public key. */
  const accounts = new Map<string, { email: string; publicKey: KeyObject }>();
  const calls: string[] = [];
  let generation = 0;
  let base = '';

  const authenticate = (req: IncomingMessage) => {
    const match = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    if (!match) throw new GcsError(401, 'required', 'Anonymous caller does not have storage.objects access.');
    const parts = match[1].split('.');
    if (parts.length !== 3) throw unauthorized('not a JWT');
    let header: Record<string, unknown>;
    let payload: Record<string, unknown>;
    try {
      [header, payload] = parts.slice(0, 2).map((part) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>);
    } catch {
      throw unauthorized('not a JWT');
    }
    if (header.alg !== 'RS256') throw unauthorized('alg must be RS256');
    const account = accounts.get(String(header.kid));
    if (!account) throw unauthorized('unknown key id');
    if (!verify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`), account.publicKey, Buffer.from(parts[2], 'base64url'))) throw unauthorized('bad signature');
    if (payload.iss !== account.email || payload.sub !== account.email) throw unauthorized('issuer and subject must be the key\'s service account');
    const now = Date.now() / 1000;
    if (typeof payload.exp !== 'number' || payload.exp <= now || typeof payload.iat !== 'number' || payload.iat > now + MAX_SKEW_S) throw unauthorized('token expired or not yet valid');
    const scopes = String(payload.scope ?? '').split(' ');
    if (!scopes.some((scope) => WRITE_SCOPES.includes(scope))) throw new GcsError(403, 'insufficientPermissions', 'Insufficient Permission: the token has no storage scope');
  };

  const bucketOf = (name: string) => {
    const bucket = buckets.get(name);
    if (!bucket) throw new GcsError(404, 'notFound', 'The specified bucket does not exist.');
    return bucket;
  };

  const resource = (bucket: string, name: string, object: StoredObject) => ({
    kind: 'storage#object',
    id: `${bucket}/${name}/${object.generation}`,
    selfLink: `${base}/storage/v1/b/${bucket}/o/${encodeURIComponent(name)}`,
    mediaLink: `${base}/download/storage/v1/b/${bucket}/o/${encodeURIComponent(name)}?generation=${object.generation}&alt=media`,
    name,
    bucket,
    generation: String(object.generation),
    metageneration: '1',
    contentType: object.contentType,
    size: String(object.data.length),
    md5Hash: hashes(object.data).md5,
    crc32c: hashes(object.data).crc32c,
    timeCreated: object.updated.toISOString(),
    updated: object.updated.toISOString(),
  });

  const store = (bucket: string, name: string, contentType: string, data: Buffer) => {
    const object: StoredObject = { data, contentType, generation: ++generation, updated: new Date() };
    bucketOf(bucket).set(name, object);
    return resource(bucket, name, object);
  };

  /**
   * A multipart upload (`multipart/related`): the object's JSON metadata, then its data. A
   * `X-Goog-Hash` header, when sent, must match what arrived.
   */
  const upload = async (req: IncomingMessage, res: ServerResponse, bucket: string, query: URLSearchParams) => {
    const boundary = /^multipart\/related; *boundary="?([^";]+)"?/.exec(req.headers['content-type'] ?? '')?.[1];
    if (!boundary) throw new GcsError(400, 'invalid', 'A multipart upload needs Content-Type multipart/related with a boundary.');
    const body = await readBody(req);
    // `--B CRLF part CRLF --B CRLF part CRLF --B--`: a part ends where CRLF and the next delimiter start.
    const marker = `--${boundary}`;
    const parts: Buffer[] = [];
    let at = body.indexOf(marker);
    while (at >= 0 && body.subarray(at + marker.length, at + marker.length + 2).toString() !== '--') {
      const next = body.indexOf(`\r\n${marker}`, at + marker.length);
      if (next < 0) throw new GcsError(400, 'invalid', 'The multipart body is not terminated.');
      parts.push(body.subarray(at + marker.length + 2, next));
      at = next + 2;
    }
    if (parts.length !== 2) throw new GcsError(400, 'invalid', 'A multipart upload has two parts: metadata and media.');
    const [metadataPart, mediaPart] = parts.map((part) => {
      const end = part.indexOf('\r\n\r\n');
      return { headers: part.subarray(0, end).toString('utf8'), data: part.subarray(end + 4) };
    });
    const metadata = JSON.parse(metadataPart.data.toString('utf8')) as { name?: string; contentType?: string };
    const name = query.get('name') ?? metadata.name;
    if (!name) throw new GcsError(400, 'required', 'Required: object name.');
    for (const [, algorithm, value] of String(req.headers['x-goog-hash'] ?? '').matchAll(/(crc32c|md5)=([^,]+)/g)) {
      if (value !== hashes(mediaPart.data)[algorithm as 'crc32c' | 'md5']) throw new GcsError(400, 'invalid', `Provided ${algorithm} hash doesn't match calculated hash.`);
    }
    const contentType = metadata.contentType ?? /content-type: *(\S+)/i.exec(mediaPart.headers)?.[1] ?? 'application/octet-stream';
    sendJson(res, 200, store(bucket, name, contentType, mediaPart.data));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', base);
    calls.push(`${req.method} ${url.pathname}`);
    authenticate(req);
    const uploadTo = /^\/upload\/storage\/v1\/b\/([^/]+)\/o$/.exec(url.pathname);
    if (uploadTo && req.method === 'POST' && url.searchParams.get('uploadType') === 'multipart') return upload(req, res, uploadTo[1], url.searchParams);
    const list = /^\/storage\/v1\/b\/([^/]+)\/o$/.exec(url.pathname);
    if (list && req.method === 'GET') {
      const prefix = url.searchParams.get('prefix') ?? '';
      const after = url.searchParams.get('pageToken') ? Buffer.from(url.searchParams.get('pageToken')!, 'base64url').toString('utf8') : '';
      const limit = Math.min(Number(url.searchParams.get('maxResults') ?? emulator.pageSize), emulator.pageSize);
      const names = [...bucketOf(list[1]).keys()].filter((name) => name.startsWith(prefix) && name > after).sort();
      const page = names.slice(0, limit);
      const objects = bucketOf(list[1]);
      return sendJson(res, 200, {
        kind: 'storage#objects',
        items: page.map((name) => resource(list[1], name, objects.get(name)!)),
        ...(names.length > limit ? { nextPageToken: Buffer.from(page[page.length - 1]).toString('base64url') } : {}),
      });
    }
    const object = /^\/(?:download\/)?storage\/v1\/b\/([^/]+)\/o\/(.+)$/.exec(url.pathname);
    if (object) {
      const [bucketName, name] = [object[1], decodeURIComponent(object[2])];
      const stored = bucketOf(bucketName).get(name);
      if (!stored) throw new GcsError(404, 'notFound', `No such object: ${bucketName}/${name}`);
      if (req.method === 'DELETE') {
        bucketOf(bucketName).delete(name);
        res.writeHead(204);
        return res.end();
      }
      if (req.method === 'GET' && url.searchParams.get('alt') === 'media') {
        res.writeHead(200, { 'content-type': stored.contentType, 'content-length': stored.data.length, 'x-goog-hash': `crc32c=${hashes(stored.data).crc32c},md5=${hashes(stored.data).md5}` });
        return res.end(stored.data);
      }
      if (req.method === 'GET') return sendJson(res, 200, resource(bucketName, name, stored));
    }
    throw new GcsError(404, 'notFound', `Not Found: ${req.method} ${url.pathname}`);
  };

  const server = await listenLocally(async (req, res) => {
    try {
      await handle(req, res);
    } catch (err) {
      if (!(err instanceof GcsError)) throw err;
      sendJson(res, err.status, { error: { code: err.status, message: err.message, errors: [{ domain: 'global', reason: err.reason, message: err.message }] } });
    }
  });
  base = server.url;

  const emulator: GcsEmulator = {
    url: server.url,
    buckets,
    pageSize: 1000,
    calls,
    createServiceAccount(name) {
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const id = randomBytes(20).toString('hex');
      const email = `${name}@${PROJECT}.iam.gserviceaccount.com`;
      accounts.set(id, { email, publicKey });
      return {
        type: 'service_account',
        project_id: PROJECT,
        private_key_id: id,
        private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        client_email: email,
        client_id: String(BigInt(`0x${randomBytes(8).toString('hex')}`)),
        // Clients sign their own tokens here; an exchange at this URI is refused like any unsigned call.
        token_uri: `${server.url}/token`,
      };
    },
    close: () => server.close(),
  };
  return emulator;
}
