import { durationSeconds, INVALID_DURATION } from './duration';
import type { FieldSchema, FieldType } from './types';

/** Thrown by a coercer; `reason` completes "<value> ..." and never contains the value itself. */
export class InvalidValue extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'InvalidValue';
  }
}

export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const INTEGER = /^[-+]?\d+$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
/** The spellings Vault accepts for a boolean (Go's strconv.ParseBool). */
const BOOL_WORDS = new Map([
  ...['1', 't', 'T', 'true', 'TRUE', 'True'].map((word) => [word, true] as const),
  ...['0', 'f', 'F', 'false', 'FALSE', 'False'].map((word) => [word, false] as const),
]);

type Coercer = (value: unknown) => unknown;

const COERCERS: Record<FieldType, Coercer> = {
  string: toText,
  int: (value) => integer(value) ?? invalid('is not a valid integer'),
  bool: toBool,
  duration: (value) => durationSeconds(value) ?? invalid(INVALID_DURATION),
  'comma-string-list': (value) => stringList(value) ?? invalid('is not a valid list of strings'),
  'comma-int-list': toIntList,
  list: (value) => (Array.isArray(value) ? value : invalid('is not a list')),
  map: (value) => objectOrJson(value) ?? invalid('is not a map'),
  'kv-pairs': toKeyValuePairs,
  name: toName,
  time: toTime,
  header: toHeader,
};

/** Coerces one client value to the field's type, then checks `allowed`. Throws InvalidValue. */
export function coerceValue(field: FieldSchema, value: unknown): unknown {
  const coerced = COERCERS[field.type](value);
  if (field.allowed) checkAllowed(field.allowed, coerced);
  return coerced;
}

function invalid(reason: string): never {
  throw new InvalidValue(reason);
}

function checkAllowed(allowed: readonly string[], value: unknown): void {
  const values = Array.isArray(value) ? value : [value];
  if (values.some((item) => typeof item === 'string' && !allowed.includes(item))) {
    invalid(`is not one of: ${allowed.join(', ')}`);
  }
}

/** Strings as they are; numbers and booleans in their string form (as Vault's weak decoding does). */
function scalarString(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') return String(value);
  return undefined;
}

/** A NUL cannot be stored in a key or compared as an id (PostgreSQL refuses it in text). */
function toText(value: unknown): string {
  const text = scalarString(value) ?? invalid('is not a valid string');
  return text.includes('\u0000') ? invalid('contains a NUL character') : text;
}

function integer(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : undefined;
  if (typeof value === 'string' && INTEGER.test(value)) {
    const parsed = Number(value);
    return Number.isSafeInteger(parsed) ? parsed : undefined;
  }
  return undefined;
}

/** A boolean as Vault parses one from text, or undefined when the text is no boolean. */
export function parseBool(text: string): boolean | undefined {
  return BOOL_WORDS.get(text);
}

function toBool(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  const parsed = typeof value === 'string' || typeof value === 'number' ? parseBool(String(value)) : undefined;
  return parsed ?? invalid('is not a valid boolean');
}

/** A JSON array of scalars or a comma-separated string; items trimmed, empty items dropped. */
function stringList(value: unknown): string[] | undefined {
  const items = typeof value === 'string' ? value.split(',') : Array.isArray(value) ? value : [value];
  const strings = items.map(scalarString);
  if (strings.some((item) => item === undefined)) return undefined;
  return (strings as string[]).map((item) => item.trim()).filter((item) => item !== '');
}

function toIntList(value: unknown): number[] {
  const numbers = stringList(value)?.map(integer);
  if (!numbers || numbers.some((item) => item === undefined)) return invalid('is not a valid list of integers');
  return numbers as number[];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** A plain object, or a string holding a JSON object (clients that cannot send nested JSON). */
function objectOrJson(value: unknown): Record<string, unknown> | undefined {
  if (isPlainObject(value)) return value;
  if (typeof value !== 'string') return undefined;
  try {
    const parsed: unknown = JSON.parse(value);
    return isPlainObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function toKeyValuePairs(value: unknown): Record<string, string> {
  const pairs = isPlainObject(value)
    ? Object.entries(value).map(([key, item]) => [key, scalarString(item)] as const)
    : stringList(value)?.map(splitPair);
  const complete = (pair: readonly [string, string | undefined]): pair is readonly [string, string] =>
    pair[0] !== '' && pair[1] !== undefined;
  if (!pairs?.every(complete)) return invalid('is not a map of strings or a list of "key=value" pairs');
  return Object.fromEntries(pairs);
}

function splitPair(pair: string): readonly [string, string | undefined] {
  const separator = pair.indexOf('=');
  return separator < 0 ? [pair, undefined] : [pair.slice(0, separator).trim(), pair.slice(separator + 1)];
}

function toName(value: unknown): string {
  if (typeof value === 'string' && NAME_PATTERN.test(value)) return value;
  return invalid('is not a valid name (letters, digits, "_", "." and "-", starting with a letter or digit)');
}

function toTime(value: unknown): Date {
  const time =
    typeof value === 'string' && RFC3339.test(value)
      ? new Date(value)
      : typeof value === 'number' || (typeof value === 'string' && INTEGER.test(value))
        ? new Date(Number(value) * 1000)
        : undefined;
  if (time === undefined || Number.isNaN(time.getTime())) return invalid('is not an RFC 3339 time or unix seconds');
  return time;
}

/** Headers: an object, or a string holding it as JSON or as base64 of JSON (Vault's TypeHeader). */
function toHeader(value: unknown): Record<string, string[]> {
  const headers = objectOrJson(value) ?? (typeof value === 'string' ? objectOrJson(Buffer.from(value, 'base64').toString('utf8')) : undefined);
  const reason = 'is not a map of header names to strings or lists of strings';
  if (!headers) return invalid(reason);
  return Object.fromEntries(
    Object.entries(headers).map(([name, item]) => {
      if (typeof item === 'string') return [name, [item]];
      if (Array.isArray(item) && item.every((entry) => typeof entry === 'string')) return [name, [...item]];
      return invalid(reason);
    }),
  );
}
