/**
 * Server-side AWS Signature Version 4 check, shared by every AWS emulator: the request is signed
 * again with the secret the emulator holds for its access key (with only the headers the client
 * signed) and the two signatures compared. Header-signed and presigned (query) requests are both
 * checked. Failures carry the status and error code AWS answers with.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { NodeSha256 } from '@svc/sdk';

/** A secret the emulator knows for an access key id; session credentials carry their token and expiry. */
export interface SigningSecret {
  secretAccessKey: string;
  sessionToken?: string;
  expiresAt?: Date;
}

export interface SignedRequest {
  method: string;
  /** Path and query as received, e.g. `/?Action=GetUser`. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface Verified {
  ok: true;
  accessKeyId: string;
  service: string;
  region: string;
}

export interface Refused {
  ok: false;
  status: number;
  code: string;
  message: string;
}

/** AWS refuses requests signed more than 15 minutes from its own clock. */
const MAX_SKEW_MS = 15 * 60_000;

function refuse(status: number, code: string, message: string): Refused {
  return { ok: false, status, code, message };
}

function header(headers: SignedRequest['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

/** `20261123T124500Z` → Date. */
function parseAmzDate(value: string): Date | undefined {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s] = match;
  return new Date(Date.UTC(+y, +mo - 1, +d, +h, +mi, +s));
}

interface Authorization {
  ok: true;
  accessKeyId: string;
  scopeDate: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
  amzDate: string;
  sessionToken?: string;
  presigned: boolean;
}

function parseAuthorization(req: SignedRequest, query: URLSearchParams): Authorization | Refused {
  const presignedSignature = query.get('X-Amz-Signature');
  let credential: string | undefined;
  let signedHeaders: string | undefined;
  let signature: string | undefined;
  let amzDate: string | undefined;
  let sessionToken: string | undefined;
  if (presignedSignature !== null) {
    if (query.get('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') return refuse(400, 'IncompleteSignature', 'X-Amz-Algorithm must be AWS4-HMAC-SHA256');
    credential = query.get('X-Amz-Credential') ?? undefined;
    signedHeaders = query.get('X-Amz-SignedHeaders') ?? undefined;
    signature = presignedSignature;
    amzDate = query.get('X-Amz-Date') ?? undefined;
    sessionToken = query.get('X-Amz-Security-Token') ?? undefined;
  } else {
    const authorization = header(req.headers, 'authorization');
    if (!authorization) return refuse(403, 'MissingAuthenticationToken', 'Request is missing Authentication Token');
    const match = /^AWS4-HMAC-SHA256 (.*)$/.exec(authorization);
    if (!match) return refuse(400, 'IncompleteSignature', 'Authorization header requires the AWS4-HMAC-SHA256 algorithm');
    const parts = Object.fromEntries(match[1].split(/,\s*/).map((part) => part.split('=', 2) as [string, string]));
    credential = parts.Credential;
    signedHeaders = parts.SignedHeaders;
    signature = parts.Signature;
    amzDate = header(req.headers, 'x-amz-date');
    sessionToken = header(req.headers, 'x-amz-security-token');
  }
  const scope = credential?.split('/') ?? [];
  if (scope.length !== 5 || scope[4] !== 'aws4_request' || !signedHeaders || !signature || !amzDate) {
    return refuse(400, 'IncompleteSignature', 'Authorization requires Credential=KEY/DATE/REGION/SERVICE/aws4_request, SignedHeaders, Signature and X-Amz-Date');
  }
  const [accessKeyId, scopeDate, region, service] = scope;
  return { ok: true, accessKeyId, scopeDate, region, service, signedHeaders: signedHeaders.split(';'), signature, amzDate, sessionToken, presigned: presignedSignature !== null };
}

/**
 * Checks one request's signature against the secret `lookup` returns for its access key id.
 * `now` is the emulator's clock (tests move it to prove skew is refused).
 */
export async function verifySigV4(req: SignedRequest, lookup: (accessKeyId: string) => SigningSecret | undefined, now = new Date()): Promise<Verified | Refused> {
  const url = new URL(req.url, 'http://emulator');
  const parsed = parseAuthorization(req, url.searchParams);
  if (!parsed.ok) return parsed;
  const signingDate = parseAmzDate(parsed.amzDate);
  if (!signingDate || !parsed.amzDate.startsWith(parsed.scopeDate)) return refuse(400, 'IncompleteSignature', 'X-Amz-Date must be a basic ISO 8601 time matching the credential scope date');
  const secret = lookup(parsed.accessKeyId);
  if (!secret) return refuse(403, 'InvalidClientTokenId', 'The security token included in the request is invalid.');
  if (secret.sessionToken !== undefined && parsed.sessionToken !== secret.sessionToken) {
    return refuse(403, 'InvalidClientTokenId', 'The security token included in the request is invalid.');
  }
  if (Math.abs(now.getTime() - signingDate.getTime()) > MAX_SKEW_MS) {
    return refuse(403, 'RequestExpired', `Request has expired. Signed at ${parsed.amzDate}, server time ${now.toISOString()}.`);
  }
  if (secret.expiresAt && secret.expiresAt.getTime() <= now.getTime()) return refuse(403, 'ExpiredToken', 'The security token included in the request is expired');

  // A signed payload hash stands for the body in the signature, so it must be the body's.
  const payloadHash = header(req.headers, 'x-amz-content-sha256');
  if (payloadHash && /^[0-9a-f]{64}$/.test(payloadHash) && payloadHash !== createHash('sha256').update(req.body).digest('hex')) {
    return parsed.service === 's3'
      ? refuse(400, 'XAmzContentSHA256Mismatch', 'The provided x-amz-content-sha256 header does not match what was computed.')
      : refuse(403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided.');
  }
  const signer = new SignatureV4({
    service: parsed.service,
    region: parsed.region,
    credentials: { accessKeyId: parsed.accessKeyId, secretAccessKey: secret.secretAccessKey, sessionToken: secret.sessionToken },
    sha256: NodeSha256,
    uriEscapePath: parsed.service !== 's3',
    applyChecksum: false,
  });
  const headers: Record<string, string> = {};
  for (const name of parsed.signedHeaders) headers[name] = header(req.headers, name) ?? '';
  const query: Record<string, string | string[]> = {};
  for (const [key, value] of url.searchParams) {
    if (parsed.presigned && key === 'X-Amz-Signature') continue;
    const existing = query[key];
    query[key] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
  }
  const [hostname, port] = (headers.host ?? '').split(':');
  const request = { method: req.method, protocol: 'http:', hostname, port: port ? Number(port) : undefined, path: url.pathname, query, headers, body: req.body };
  let expected: string;
  if (parsed.presigned) {
    // The presigner adds the X-Amz-* parameters itself.
    const presigned = await signer.presign(
      { ...request, query: Object.fromEntries(Object.entries(query).filter(([key]) => !key.startsWith('X-Amz-'))) },
      { signingDate, expiresIn: Number(query['X-Amz-Expires'] ?? 900), unhoistableHeaders: new Set(), signableHeaders: new Set(parsed.signedHeaders) },
    );
    expected = String(presigned.query?.['X-Amz-Signature']);
  } else {
    // The client's x-amz-date and token are among the signed headers; the signer sets the same values.
    const signed = await signer.sign(request, { signingDate, signableHeaders: new Set(parsed.signedHeaders) });
    expected = /Signature=([0-9a-f]+)/.exec(String(signed.headers.authorization))?.[1] ?? '';
  }
  const given = Buffer.from(parsed.signature);
  if (given.length !== expected.length || !timingSafeEqual(given, Buffer.from(expected))) {
    return refuse(403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.');
  }
  return { ok: true, accessKeyId: parsed.accessKeyId, service: parsed.service, region: parsed.region };
}
