import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import type { Keyring, KeyTerm } from './keyring';
import type { SharedDecoder } from './types';

/**
 * Layout of every value the barrier writes:
 *
 *   | term: 4 bytes, big-endian | nonce: 12 random bytes | ciphertext | GCM tag: 16 bytes |
 *
 * AES-256-GCM under the keyring term named in the header; the value's storage key (its full
 * path, UTF-8) is the associated data, so a value copied to another key fails to authenticate.
 */
const TERM_BYTES = 4;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = TERM_BYTES + NONCE_BYTES;
/** Nonces drawn from the random source at once: one draw per this many encryptions instead of one each. */
const NONCES_PER_DRAW = 256;
let nonces: Buffer = Buffer.alloc(0);
let nextNonce = 0;

/** Writes a fresh random nonce at `offset` of `target`; each drawn nonce is used once. */
function writeNonce(target: Buffer, offset: number): void {
  if (nextNonce + NONCE_BYTES > nonces.length) {
    nonces = randomBytes(NONCE_BYTES * NONCES_PER_DRAW);
    nextNonce = 0;
  }
  nonces.copy(target, offset, nextNonce, nextNonce + NONCE_BYTES);
  nextNonce += NONCE_BYTES;
}

/** Larger values are decrypted on every read: remembering them would double the cache's memory for little gain. */
const MAX_REMEMBERED_BYTES = 64 * 1024;

/** What is remembered of one stored value: its plaintext, and what readers decoded of it (by decoder). */
interface Remembered {
  path: string;
  plaintext: Buffer;
  decoded?: Map<SharedDecoder<unknown>, unknown>;
}

/**
 * Encrypts and decrypts values with one keyring; AES keys are imported once per term.
 *
 * The storage cache hands out the same value object for a key until the key changes, so a hot key
 * would be decrypted again on every read (setting up AES-GCM was about an eighth of a KV read's
 * CPU). Plaintexts are therefore remembered per stored value object, with what readers decoded of
 * them (`decode`): an entry lives exactly as long as the cache (or anyone) holds that value, needs no
 * invalidation (a changed key is a new object), and goes with this cipher when the barrier is
 * sealed or given another keyring.
 */
export class BarrierCipher {
  private readonly keyObjects = new Map<number, KeyObject>();
  private readonly decrypted = new WeakMap<Buffer, Remembered>();

  constructor(readonly keyring: Keyring) {}

  encrypt(path: string, plaintext: Buffer): Buffer {
    const active = this.keyring.active();
    const header = Buffer.allocUnsafe(HEADER_BYTES);
    header.writeUInt32BE(active.term, 0);
    writeNonce(header, TERM_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keyOf(active), header.subarray(TERM_BYTES));
    cipher.setAAD(Buffer.from(path, 'utf8'));
    return Buffer.concat([header, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  }

  /** The plaintext of `blob`, stored at `path`: a copy the caller may keep or change. */
  decrypt(path: string, blob: Buffer): Buffer {
    const entry = this.remembered(path, blob);
    return entry ? Buffer.from(entry.plaintext) : this.open(path, blob);
  }

  /** `decode` of the plaintext of `blob`, stored at `path`, shared by every caller (see SharedDecoder). */
  decode<T>(path: string, blob: Buffer, decode: SharedDecoder<T>): T {
    const entry = this.remembered(path, blob);
    if (!entry) return decode(this.open(path, blob));
    entry.decoded ??= new Map();
    if (entry.decoded.has(decode)) return entry.decoded.get(decode) as T;
    const value = decode(entry.plaintext);
    entry.decoded.set(decode, value);
    return value;
  }

  /** What is remembered of `blob`, decrypted now if it is new; undefined for a value too large to remember. */
  private remembered(path: string, blob: Buffer): Remembered | undefined {
    const known = this.decrypted.get(blob);
    if (known?.path === path) return known;
    if (blob.length - HEADER_BYTES - TAG_BYTES > MAX_REMEMBERED_BYTES) return undefined;
    const entry: Remembered = { path, plaintext: this.open(path, blob) };
    this.decrypted.set(blob, entry);
    return entry;
  }

  private open(path: string, blob: Buffer): Buffer {
    if (blob.length < HEADER_BYTES + TAG_BYTES) {
      throw new Error(`barrier: value at ${JSON.stringify(path)} is truncated (${blob.length} bytes)`);
    }
    const termNumber = blob.readUInt32BE(0);
    const term = this.keyring.term(termNumber);
    if (!term) {
      throw new Error(`barrier: value at ${JSON.stringify(path)} is encrypted under unknown keyring term ${termNumber}`);
    }
    const decipher = createDecipheriv('aes-256-gcm', this.keyOf(term), blob.subarray(TERM_BYTES, HEADER_BYTES));
    decipher.setAAD(Buffer.from(path, 'utf8'));
    decipher.setAuthTag(blob.subarray(blob.length - TAG_BYTES));
    const body = decipher.update(blob.subarray(HEADER_BYTES, blob.length - TAG_BYTES));
    try {
      return Buffer.concat([body, decipher.final()]);
    } catch {
      throw new Error(
        `barrier: value at ${JSON.stringify(path)} failed authentication (altered, or written under another key)`,
      );
    }
  }

  private keyOf(term: KeyTerm): KeyObject {
    let key = this.keyObjects.get(term.term);
    if (!key) {
      key = createSecretKey(term.key);
      this.keyObjects.set(term.term, key);
    }
    return key;
  }
}
