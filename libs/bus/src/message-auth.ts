import { createHmac, createSecretKey, hkdfSync, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { BusLogger } from './types';

/**
 * Authentication of every message of a cluster on NATS: a fixed-size prefix of the payload holds
 * a version, the sender's clock, the sender's random id and message sequence number, and an
 * HMAC-SHA256 over those, the subject, the reply subject, the headers and the payload. The HMAC
 * key is derived from the cluster key that every process of the cluster is configured with, so a
 * process with NATS access alone can neither be heard nor speak for the cluster.
 */

const VERSION = 1;
const TIMESTAMP_OFFSET = 1;
const SENDER_OFFSET = 7;
const SEQUENCE_OFFSET = 13;
const MAC_OFFSET = 19;
const MAC_BYTES = 32;
/** Bytes the authentication adds in front of every payload. */
export const AUTH_PREFIX_BYTES = MAC_OFFSET + MAC_BYTES;

export const MIN_CLUSTER_KEY_BYTES = 32;
/** How far a message's timestamp may lie from the receiver's clock (skew plus transit). */
export const MAX_CLOCK_SKEW_MS = 30_000;
const HKDF_INFO = 'svc bus message authentication v1';
const HOW_TO_MAKE_A_KEY = 'make one with `openssl rand -base64 32 > cluster.key; chmod 600 cluster.key` and give every process of the cluster the same file';

export type RejectionReason = 'unauthenticated' | 'bad signature' | 'stale timestamp' | 'replayed';

/**
 * Remembers, for one subscription, the last sequence number accepted from each sender. NATS
 * delivers one publisher's messages in order, so anything not newer is a replay.
 */
export class ReplayGuard {
  private readonly senders = new Map<number, { sequence: number; timestamp: number }>();

  /** False when this sender's message was seen already. */
  accept(sender: number, sequence: number, timestamp: number, now: number): boolean {
    const last = this.senders.get(sender);
    if (last) {
      if (sequence <= last.sequence) return false;
      last.sequence = sequence;
      last.timestamp = timestamp;
      return true;
    }
    this.forgetSilentSenders(now);
    this.senders.set(sender, { sequence, timestamp });
    return true;
  }

  /** A sender silent for longer than the skew window cannot be replayed (its messages are stale). */
  private forgetSilentSenders(now: number): void {
    for (const [sender, last] of this.senders) {
      if (now - last.timestamp > MAX_CLOCK_SKEW_MS) this.senders.delete(sender);
    }
  }
}

export class MessageAuthenticator {
  private readonly key: KeyObject;
  /** 48 random bits: which process sent a message, for replay detection. */
  private readonly sender = readUint48(randomBytes(6), 0);
  private sequence = 0;

  constructor(clusterKey: Uint8Array) {
    if (clusterKey.length < MIN_CLUSTER_KEY_BYTES) {
      throw new Error(`the cluster key must hold at least ${MIN_CLUSTER_KEY_BYTES} bytes of key material, got ${clusterKey.length}`);
    }
    this.key = createSecretKey(Buffer.from(hkdfSync('sha256', clusterKey, new Uint8Array(0), HKDF_INFO, MAC_BYTES)));
  }

  /** The payload with its authentication prefix, for `subject` (and `reply`, when a request). */
  sign(subject: string, reply: string | undefined, headers: Record<string, string> | undefined, payload: Uint8Array): Uint8Array {
    const framed = Buffer.allocUnsafe(AUTH_PREFIX_BYTES + payload.length);
    framed[0] = VERSION;
    framed.writeUIntBE(Date.now(), TIMESTAMP_OFFSET, 6);
    framed.writeUIntBE(this.sender, SENDER_OFFSET, 6);
    framed.writeUIntBE(++this.sequence, SEQUENCE_OFFSET, 6);
    framed.set(this.mac(framed, subject, reply, headers, payload), MAC_OFFSET);
    framed.set(payload, AUTH_PREFIX_BYTES);
    return framed;
  }

  /** The payload without its prefix when the message is authentic, fresh and new to `replays`. */
  verify(
    subject: string,
    reply: string | undefined,
    headers: Record<string, string> | undefined,
    framed: Uint8Array,
    replays: ReplayGuard,
  ): Uint8Array | RejectionReason {
    if (framed.length < AUTH_PREFIX_BYTES || framed[0] !== VERSION) return 'unauthenticated';
    const payload = framed.subarray(AUTH_PREFIX_BYTES);
    const expected = this.mac(framed, subject, reply, headers, payload);
    if (!timingSafeEqual(expected, framed.subarray(MAC_OFFSET, AUTH_PREFIX_BYTES))) return 'bad signature';
    const timestamp = readUint48(framed, TIMESTAMP_OFFSET);
    const now = Date.now();
    if (Math.abs(now - timestamp) > MAX_CLOCK_SKEW_MS) return 'stale timestamp';
    if (!replays.accept(readUint48(framed, SENDER_OFFSET), readUint48(framed, SEQUENCE_OFFSET), timestamp, now)) return 'replayed';
    return payload;
  }

  private mac(framed: Uint8Array, subject: string, reply: string | undefined, headers: Record<string, string> | undefined, payload: Uint8Array): Buffer {
    // Subjects hold no spaces or line breaks and the headers are one line of JSON, so the text
    // part cannot be read two ways.
    return createHmac('sha256', this.key)
      .update(framed.subarray(0, MAC_OFFSET))
      .update(`${subject} ${reply ?? ''}\n${canonicalHeaders(headers)}\n`)
      .update(payload)
      .digest();
  }
}

/**
 * Reads the cluster key file: base64 text (as `openssl rand -base64 32` writes) or raw bytes, at
 * least MIN_CLUSTER_KEY_BYTES of key material. Warns when others than the owner may read it.
 */
export function readClusterKey(file: string | undefined, logger?: BusLogger): Uint8Array {
  if (file === undefined) {
    throw new Error(`NATS bus config: cluster_key_file is required; every process of a cluster authenticates its bus messages with the cluster key: ${HOW_TO_MAKE_A_KEY}`);
  }
  let contents: Buffer;
  try {
    contents = readFileSync(file);
    if ((statSync(file).mode & 0o077) !== 0) {
      logger?.warn({ file }, 'the cluster key file is readable by group or others; restrict it with chmod 600');
    }
  } catch (err) {
    throw new Error(`NATS bus config: cannot read cluster_key_file ${file}: ${(err as NodeJS.ErrnoException).code}`);
  }
  const text = contents.toString('latin1').trim();
  const key = /^(?:[A-Za-z0-9+/]{4})+(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text) ? Buffer.from(text, 'base64') : contents;
  if (key.length < MIN_CLUSTER_KEY_BYTES) {
    throw new Error(`NATS bus config: cluster_key_file ${file} holds ${key.length} bytes of key material, at least ${MIN_CLUSTER_KEY_BYTES} are needed: ${HOW_TO_MAKE_A_KEY}`);
  }
  return key;
}

/** Headers in one canonical line (empty without headers), as both ends see them. */
function canonicalHeaders(headers: Record<string, string> | undefined): string {
  if (!headers) return '';
  const entries = Object.entries(headers);
  return entries.length === 0 ? '' : JSON.stringify(entries.sort(([a], [b]) => (a < b ? -1 : 1)));
}

function readUint48(bytes: Uint8Array, offset: number): number {
  let value = 0;
  for (let i = offset; i < offset + 6; i++) value = value * 256 + bytes[i];
  return value;
}

const REJECTION_LOG_WINDOW_MS = 60_000;
const REJECTION_LOG_LINES_PER_WINDOW = 10;

/**
 * Warns about refused messages, at most REJECTION_LOG_LINES_PER_WINDOW lines a minute so a flood
 * of forgeries cannot flood the log; the next line written counts those left out.
 */
export class RejectionLog {
  private windowStart = 0;
  private written = 0;
  private suppressed = 0;

  constructor(private readonly logger: BusLogger | undefined) {}

  note(subject: string, reason: RejectionReason): void {
    const now = Date.now();
    if (now - this.windowStart > REJECTION_LOG_WINDOW_MS) {
      this.windowStart = now;
      this.written = 0;
    }
    if (this.written >= REJECTION_LOG_LINES_PER_WINDOW) {
      this.suppressed++;
      return;
    }
    this.written++;
    const fields = this.suppressed > 0 ? { subject, reason, suppressed: this.suppressed } : { subject, reason };
    this.suppressed = 0;
    this.logger?.warn(fields, 'bus message refused');
  }
}
