import { ServiceError } from '@svc/api-contract';

/** Prefix of every ciphertext, signature and HMAC this engine produces (Vault: `vault:`). */
export const VALUE_PREFIX = 'svc:v';

/**
 * Strict standard base64 (padded, as Go's StdEncoding): Node's decoder skips characters it does not
 * know, so a decoded length that does not match the text's length means the text was not base64.
 * `what` names the field in the error; the value itself is never echoed.
 */
export function decodeBase64(text: string, what: string): Buffer {
  const decoded = Buffer.from(text, 'base64');
  if (text.length % 4 !== 0 || decoded.length !== expectedLength(text)) {
    throw ServiceError.badRequest(`${what} is not valid base64`);
  }
  return decoded;
}

const EQUALS_SIGN = 0x3d;

function expectedLength(text: string): number {
  if (text.length === 0) return 0;
  const last = text.length - 1;
  // charCodeAt, not endsWith: this runs for every batch item, and endsWith is a builtin call.
  const padding = text.charCodeAt(last) !== EQUALS_SIGN ? 0 : text.charCodeAt(last - 1) === EQUALS_SIGN ? 2 : 1;
  return (text.length / 4) * 3 - padding;
}

/** Optional base64 field: empty or absent gives an empty buffer. */
export function decodeOptionalBase64(text: string | undefined, what: string): Buffer | undefined {
  return text ? decodeBase64(text, what) : undefined;
}

export function formatVersioned(version: number, body: string): string {
  return `${VALUE_PREFIX}${version}:${body}`;
}

export interface VersionedValue {
  version: number;
  body: string;
}

/** Vault's prefix: values made by Vault (with a key imported here) are read as they are. */
const VAULT_VALUE_PREFIX = 'vault:v';

/** Splits `svc:v<version>:<body>` (or Vault's `vault:v<version>:<body>`); `what` is "ciphertext", "signature" or "hmac". */
export function parseVersioned(value: string, what: string): VersionedValue {
  const prefix = value.startsWith(VALUE_PREFIX) ? VALUE_PREFIX : value.startsWith(VAULT_VALUE_PREFIX) ? VAULT_VALUE_PREFIX : undefined;
  if (prefix === undefined) throw ServiceError.badRequest(`invalid ${what}: no prefix`);
  const separator = value.indexOf(':', prefix.length);
  if (separator < 0) throw ServiceError.badRequest(`invalid ${what}: wrong number of fields`);
  const versionText = value.slice(prefix.length, separator);
  const version = /^[1-9]\d{0,8}$/.test(versionText) ? Number(versionText) : NaN;
  if (Number.isNaN(version)) throw ServiceError.badRequest(`invalid ${what}: version number could not be decoded`);
  return { version, body: value.slice(separator + 1) };
}
