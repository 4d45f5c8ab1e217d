/** The JSON shapes of Document 1: response envelope, wrap info, auth block. */

// The wire shapes are the SDK's, which clients install alone (libs/sdk is packed without this lib).
import type { AuthBlock, Envelope, WrapInfo } from '@svc/sdk';

export type { AuthBlock, Envelope, WrapInfo };

/**
 * Response data already serialized as JSON. JSON.stringify was the largest cost of a 1,000-item
 * transit batch after the cipher calls, and an engine whose values need no escaping writes them
 * faster; the envelope splices the text in unchanged. Whatever needs the object (the audit log,
 * response wrapping) gets it parsed, once.
 */
export class JsonText {
  private parsed?: Record<string, unknown>;

  constructor(readonly text: string) {}

  value(): Record<string, unknown> {
    return (this.parsed ??= JSON.parse(this.text) as Record<string, unknown>);
  }

  toJSON(): Record<string, unknown> {
    return this.value();
  }
}

/** Response data as an object, whichever form it came in. */
export function dataObject(data: Record<string, unknown> | JsonText): Record<string, unknown> {
  return data instanceof JsonText ? data.value() : data;
}

/** The envelope as the server builds it: its data may still be JsonText. */
export interface OutgoingEnvelope extends Omit<Envelope, 'data'> {
  data: Record<string, unknown> | JsonText | null;
}

export function envelope(requestId: string, fields: Partial<OutgoingEnvelope>): OutgoingEnvelope {
  const body: OutgoingEnvelope = {
    request_id: requestId,
    lease_id: fields.lease_id ?? '',
    renewable: fields.renewable ?? false,
    lease_duration: fields.lease_duration ?? 0,
    data: fields.data ?? null,
    wrap_info: fields.wrap_info ?? null,
    warnings: fields.warnings && fields.warnings.length > 0 ? fields.warnings : null,
    auth: fields.auth ?? null,
  };
  if (fields.mount_type !== undefined) body.mount_type = fields.mount_type;
  return body;
}

/**
 * Bodies longer than this many characters are answered as UTF-8 bytes. Node writes a short string
 * body from its stack, but a long one is first joined with the HTTP head and then copied into a new
 * buffer three times its length; writing the parts into one buffer of the right size halves the
 * page faults of a 1,000-item transit batch's answer.
 */
export const LARGE_BODY_CHARS = 16 * 1024;

/** A JSON body ready for the socket: the text itself when short, its UTF-8 bytes when large. */
export type JsonBody = string | Buffer;

/**
 * The envelope as JSON, exactly as `JSON.stringify` writes it, with only the variable parts walked:
 * every answer is an envelope, and this is a third cheaper than stringifying the whole.
 */
export function envelopeJson(e: OutgoingEnvelope, dataAtTopLevel = false): JsonBody {
  const data = e.data instanceof JsonText ? e.data.text : orNull(e.data);
  const head =
    !dataAtTopLevel && e.lease_id === '' && !e.renewable && e.lease_duration === 0
      ? `{"request_id":${JSON.stringify(e.request_id)}${NO_LEASE}`
      : `{${dataAtTopLevel ? topLevelMembers(e.data, data) : ''}"request_id":${JSON.stringify(e.request_id)},"lease_id":${JSON.stringify(e.lease_id)},"renewable":${e.renewable ? 'true' : 'false'}` +
        `,"lease_duration":${Number.isFinite(e.lease_duration) ? e.lease_duration : 'null'},"data":`;
  const tail =
    e.wrap_info === null && e.warnings === null && e.auth === null && e.mount_type === undefined
      ? NOTHING_AFTER_DATA
      : `,"wrap_info":${orNull(e.wrap_info)},"warnings":${orNull(e.warnings)},"auth":${orNull(e.auth)}${e.mount_type === undefined ? '' : `,"mount_type":${JSON.stringify(e.mount_type)}`}}`;
  return data.length > LARGE_BODY_CHARS ? utf8Joined([head, data, tail]) : head + data + tail;
}

/** The members between the request id and the data of an answer without a lease, and after data without the rest: most answers. */
const NO_LEASE = ',"lease_id":"","renewable":false,"lease_duration":0,"data":';
const NOTHING_AFTER_DATA = ',"wrap_info":null,"warnings":null,"auth":null}';

const ENVELOPE_KEYS = new Set(['request_id', 'lease_id', 'renewable', 'lease_duration', 'data', 'wrap_info', 'warnings', 'auth', 'mount_type']);

/**
 * The data's members as JSON object members ending in a comma, for the envelope's top level (the
 * shape Vault keeps on some sys/ paths). A member named like an envelope field is left to the
 * envelope, which is what a client parsing Vault's answer (data first, envelope after) sees.
 */
function topLevelMembers(data: OutgoingEnvelope['data'], dataText: string): string {
  if (data === null) return '';
  const object = dataObject(data);
  // Usually no member collides: the data's own JSON, without its braces, is the members' text.
  const collides = Object.keys(object).some((key) => ENVELOPE_KEYS.has(key));
  const members = collides ? JSON.stringify(Object.fromEntries(Object.entries(object).filter(([key]) => !ENVELOPE_KEYS.has(key)))) : dataText;
  return members.length <= 2 ? '' : `${members.slice(1, -1)},`;
}

/** Any value as a JSON body (answers outside the envelope: errors, help, sys/health). */
export function jsonBody(value: unknown): JsonBody {
  const text = JSON.stringify(value);
  return text.length > LARGE_BODY_CHARS ? Buffer.from(text) : text;
}

/** The parts' UTF-8 bytes in one buffer, without joining the strings first (that copies the whole). */
function utf8Joined(parts: string[]): Buffer {
  const lengths = parts.map((part) => Buffer.byteLength(part));
  const joined = Buffer.allocUnsafe(lengths.reduce((sum, length) => sum + length, 0));
  let offset = 0;
  parts.forEach((part, index) => {
    joined.write(part, offset, 'utf8');
    offset += lengths[index];
  });
  return joined;
}

function orNull(value: unknown): string {
  return value === null ? 'null' : JSON.stringify(value);
}
