import { createHmac } from 'node:crypto';
import type { WrapInfo } from '@svc/api-contract';
import type { AuditAuth, AuditLine, NonHmacKeys } from './types';

/** Turns a sensitive string into its audit form, `hmac-sha256:<hex>`. */
export type HmacFn = (input: string) => string;

/** The HMAC an audit device writes: HMAC-SHA256 keyed by the device's salt. */
export function hmacSha256(salt: Buffer): HmacFn {
  if (salt.length === 0) throw new Error('an audit device needs a non-empty salt');
  return (input) => `hmac-sha256:${createHmac('sha256', salt).update(input, 'utf8').digest('hex')}`;
}

export interface HashOptions extends NonHmacKeys {
  /** Write everything in clear (the `log_raw` device option). Default false. */
  logRaw?: boolean;
  /** Hash token accessors too (the `hmac_accessor` device option). Default true. */
  hmacAccessor?: boolean;
  /** Replace `keys` / `key_info` of list responses by their counts (`elide_list_responses`). */
  elideListResponses?: boolean;
}

/**
 * Returns a deep copy of `line` with its sensitive values replaced by HMACs, following Vault's
 * rules: client tokens, token accessors (unless hmacAccessor is false), wrapping tokens and
 * accessors, and every string inside request and response data except under the non-HMAC keys.
 * Lease ids, paths, policies, metadata and headers stay in clear, as in Vault.
 */
export function hashStructure(line: AuditLine, hmac: HmacFn, options: HashOptions = {}): AuditLine {
  const copy = structuredClone(line);
  if (options.elideListResponses && copy.request.operation === 'list' && copy.response?.data) {
    elideListResponseData(copy.response.data);
  }
  if (options.logRaw) return copy;

  const hashAccessors = options.hmacAccessor ?? true;
  const token = (value: string) => (value ? hmac(value) : value);
  const accessor = (value: string) => (hashAccessors ? token(value) : value);
  const hashAuth = (auth: AuditAuth) => {
    auth.client_token = token(auth.client_token);
    auth.accessor = accessor(auth.accessor);
  };
  const hashWrapInfo = (wrapInfo: WrapInfo) => {
    wrapInfo.token = token(wrapInfo.token);
    wrapInfo.accessor = accessor(wrapInfo.accessor);
    if (wrapInfo.wrapped_accessor) wrapInfo.wrapped_accessor = accessor(wrapInfo.wrapped_accessor);
  };

  if (copy.auth) hashAuth(copy.auth);

  const { request, response } = copy;
  request.client_token = token(request.client_token);
  request.client_token_accessor = accessor(request.client_token_accessor);
  if (request.data) request.data = hashDataValues(request.data, hmac, options.nonHmacRequestKeys);

  if (response) {
    if (response.auth) hashAuth(response.auth);
    if (response.data) response.data = hashDataValues(response.data, hmac, options.nonHmacResponseKeys);
    if (response.wrap_info) hashWrapInfo(response.wrap_info);
  }
  return copy;
}

/**
 * Returns a copy of `data` where every string value, at any depth, is replaced by its HMAC. Keys
 * are never hashed; numbers, booleans and nulls stay. A string stays in clear when the nearest
 * object key above it is one of `clearKeys` (so a listed key covers the strings of an array under it).
 */
export function hashDataValues(
  data: Record<string, unknown>,
  hmac: HmacFn,
  clearKeys: readonly string[] = [],
): Record<string, unknown> {
  return hashObject(data, hmac, new Set(clearKeys));
}

function hashObject(object: object, hmac: HmacFn, clearKeys: ReadonlySet<string>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(object).map(([key, value]) => [key, hashValue(value, hmac, clearKeys, key)]),
  );
}

function hashValue(value: unknown, hmac: HmacFn, clearKeys: ReadonlySet<string>, key: string): unknown {
  if (typeof value === 'string') return clearKeys.has(key) ? value : hmac(value);
  // Written as JSON strings, so they are hashed as the strings a reader would see.
  if (value instanceof Date) return hashValue(value.toISOString(), hmac, clearKeys, key);
  if (value instanceof Uint8Array) return hashValue(Buffer.from(value).toString('base64'), hmac, clearKeys, key);
  if (Array.isArray(value)) return value.map((item) => hashValue(item, hmac, clearKeys, key));
  if (value !== null && typeof value === 'object') return hashObject(value, hmac, clearKeys);
  return value;
}

/** A list response's keys are often the bulk of a line and rarely worth keeping; counts are. */
function elideListResponseData(data: Record<string, unknown>): void {
  if (Array.isArray(data.keys)) data.keys = data.keys.length;
  if (data.key_info !== null && typeof data.key_info === 'object') data.key_info = Object.keys(data.key_info).length;
}
