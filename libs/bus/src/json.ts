import { Bus, RequestOptions } from './types';

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

export function encodeJson(value: unknown): Uint8Array {
  return utf8.encode(JSON.stringify(value));
}

export function decodeJson<T>(bytes: Uint8Array): T {
  try {
    return JSON.parse(utf8Decoder.decode(bytes)) as T;
  } catch {
    // The parser's own message quotes the payload, which may hold secrets.
    throw new Error(`bus payload is not valid JSON (${bytes.length} bytes)`);
  }
}

/** Sends `body` as JSON and decodes the JSON reply. */
export async function requestJson<T>(bus: Bus, subject: string, body: unknown, opts?: RequestOptions): Promise<T> {
  const reply = await bus.request(subject, encodeJson(body), opts);
  return decodeJson<T>(reply.payload);
}
