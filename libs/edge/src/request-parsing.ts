import type { Operation } from '@svc/framework';
import { parseBool, parseDuration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { JsonLimits } from '@svc/config';
import type { HttpRequest } from './exchange';
import { exceededJsonLimit } from './json-limits';

export function header(req: HttpRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Vault's names of this API's headers, which clients written for Vault send. */
const VAULT_HEADER_ALIASES: readonly (readonly [vault: string, ours: string])[] = [
  ['x-vault-token', 'x-service-token'],
  ['x-vault-namespace', 'x-service-namespace'],
  ['x-vault-request', 'x-service-request'],
  ['x-vault-wrap-ttl', 'x-service-wrap-ttl'],
  ['x-vault-policy-override', 'x-service-policy-override'],
];

/**
 * Takes each Vault header (`X-Vault-Token`, ...) as its `X-Service-` name when that one is absent,
 * so applications written for Vault work unchanged; the request's own name wins when both are sent.
 */
export function acceptVaultHeaders(headers: HttpRequest['headers']): void {
  for (const [vault, ours] of VAULT_HEADER_ALIASES) {
    if (headers[vault] !== undefined && headers[ours] === undefined) headers[ours] = headers[vault];
  }
}

export function tokenFrom(req: HttpRequest): string | undefined {
  const direct = header(req, 'x-service-token');
  if (direct) return direct;
  const auth = header(req, 'authorization');
  if (auth && /^bearer\s+/i.test(auth)) return auth.replace(/^bearer\s+/i, '').trim() || undefined;
  return undefined;
}

export function operationFor(method: string, query: URLSearchParams): Operation {
  if (query.get('help') === '1' || query.get('help') === 'true') return 'help';
  switch (method) {
    case 'GET':
    case 'HEAD':
      return listRequested(query.get('list')) ? 'list' : 'read';
    case 'LIST': // Node's parser refuses it: served as a continuation's first request (list-method.ts)
      return 'list';
    case 'POST':
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return 'delete';
    default:
      throw ServiceError.methodNotAllowed(`unsupported method ${method}`);
  }
}

/** `?list=` takes any boolean spelling Vault takes; anything else is refused rather than read as a read. */
function listRequested(value: string | null): boolean {
  if (value === null || value === '') return false;
  const list = parseBool(value);
  if (list === undefined) throw ServiceError.badRequest('query parameter "list" is not a valid boolean');
  return list;
}

/** Control characters, which the HTTP parser refuses in a raw path but percent-encoding lets through. */
const CONTROL_CHARACTER = /[\x00-\x1f\x7f]/;

export function decodePath(raw: string): string {
  if (!raw.includes('%')) return raw;
  let path: string;
  try {
    path = decodeURIComponent(raw);
  } catch {
    throw ServiceError.badRequest('malformed percent-encoding in the request path');
  }
  // No name (key, role, policy, namespace) may hold one: storage keys cannot, logs would be forged.
  if (CONTROL_CHARACTER.test(path)) throw ServiceError.badRequest('the request path contains a control character (NUL, CR, LF, ...)');
  return path;
}

const SLASH = 0x2f;

/** Document 1, convention 8: header namespace joined with the request path. */
export function joinNamespace(namespace: string | undefined, path: string): string {
  if (!namespace && path.charCodeAt(0) !== SLASH) return path;
  const ns = (namespace ?? '').replace(/^\/+|\/+$/g, '');
  return ns ? `${ns}/${path.replace(/^\/+/, '')}` : path.replace(/^\/+/, '');
}

/** JSON body for writes; query parameters for reads and lists (Document 1, convention 6). */
export function requestData(req: HttpRequest, operation: Operation, query: URLSearchParams): Record<string, unknown> {
  const fromQuery = operation === 'read' || operation === 'list' || operation === 'delete' || operation === 'help' ? queryData(query) : undefined;
  if (!req.body || req.body.length === 0) return fromQuery ?? {};
  const parsed = parseBody(req.body, req.jsonLimits);
  return fromQuery ? Object.assign(fromQuery, parsed) : parsed;
}

function queryData(query: URLSearchParams): Record<string, unknown> | undefined {
  let data: Record<string, unknown> | undefined;
  for (const [key, value] of query) if (key !== 'list' && key !== 'help') (data ??= {})[key] = value;
  return data;
}

function parseBody(body: Buffer, limits: JsonLimits): Record<string, unknown> {
  const exceeded = exceededJsonLimit(body, limits);
  if (exceeded) throw ServiceError.badRequest(`failed to parse JSON input: ${exceeded}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    // The parser's message quotes the body around the fault, which may be a secret: never echo it.
    throw ServiceError.badRequest('failed to parse JSON input: the request body is not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw ServiceError.badRequest('request body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

/** `X-Service-Wrap-TTL`: a duration, or undefined when absent. */
export function wrapTtlFrom(req: HttpRequest): number | undefined {
  const raw = header(req, 'x-service-wrap-ttl');
  if (raw === undefined || raw === '') return undefined;
  let ttl: number;
  try {
    ttl = parseDuration(raw);
  } catch {
    throw ServiceError.badRequest('X-Service-Wrap-TTL is not a valid duration');
  }
  if (ttl <= 0) throw ServiceError.badRequest('X-Service-Wrap-TTL must be greater than zero');
  return ttl;
}
