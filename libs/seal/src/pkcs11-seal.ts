import { randomBytes } from 'node:crypto';
import * as pkcs11js from 'pkcs11js';
import { type RootKeyWrapper, SealUnavailableError } from './key-wrapper';
import { Pkcs11LibraryProcess } from './pkcs11-library-process';

export type Pkcs11Mechanism = 'CKM_AES_GCM' | 'CKM_RSA_PKCS_OAEP';
export type OaepHash = 'sha1' | 'sha224' | 'sha256' | 'sha384' | 'sha512';

/** `seal "pkcs11"`: a key in an HSM, reached through its PKCS#11 library, wraps the root key. */
export interface Pkcs11SealConfig {
  type: 'pkcs11';
  /** Path of the PKCS#11 library (libsofthsm2.so, libCryptoki2_64.so, ...). */
  lib: string;
  /** The slot by id (decimal or 0x hex; ids may exceed 2^53, so kept as text), or the token by its label. */
  slot?: string;
  tokenLabel?: string;
  pin: string;
  /** The key by label and/or id (hex); at least one is given. */
  keyLabel?: string;
  keyId?: string;
  /** Unset: from the key's type (AES → CKM_AES_GCM, RSA → CKM_RSA_PKCS_OAEP). */
  mechanism?: Pkcs11Mechanism;
  /** Creates the key on the token when none matches (an AES-256 key, or an RSA-3072 pair for OAEP). */
  generateKey: boolean;
  /** The hash of CKM_RSA_PKCS_OAEP (and its MGF1); default sha256. */
  rsaOaepHash: OaepHash;
}

/** What `wrap` stores: which key and mechanism sealed the root key, so a later key change still decrypts it. */
interface WrappedRootKey {
  mechanism: Pkcs11Mechanism;
  key_label?: string;
  key_id?: string;
  /** Hash of OAEP, when it is the mechanism. */
  hash?: OaepHash;
  /** AES-GCM's 96-bit nonce, base64. */
  iv?: string;
  ciphertext: string;
}

/** The key as found on the token: the handle for encryption (the public half of a pair) and for decryption. */
interface TokenKey {
  mechanism: Pkcs11Mechanism;
  encrypt: pkcs11js.Handle;
  decrypt: pkcs11js.Handle;
  label?: string;
  id?: string;
}

interface RsaOaepParams extends pkcs11js.IParams {
  hashAlg: number;
  mgf: number;
  source: number;
}

const GCM_IV_BYTES = 12;
const GCM_TAG_BITS = 128;
const AES_KEY_BYTES = 32;
const RSA_GENERATED_BITS = 3072;
/** PKCS#11's CKZ_DATA_SPECIFIED (OAEP's label source), which pkcs11js does not export. */
const CKZ_DATA_SPECIFIED = 1;

const OAEP_HASHES: Record<OaepHash, { hashAlg: number; mgf: number }> = {
  sha1: { hashAlg: pkcs11js.CKM_SHA_1, mgf: pkcs11js.CKG_MGF1_SHA1 },
  sha224: { hashAlg: pkcs11js.CKM_SHA224, mgf: pkcs11js.CKG_MGF1_SHA224 },
  sha256: { hashAlg: pkcs11js.CKM_SHA256, mgf: pkcs11js.CKG_MGF1_SHA256 },
  sha384: { hashAlg: pkcs11js.CKM_SHA384, mgf: pkcs11js.CKG_MGF1_SHA384 },
  sha512: { hashAlg: pkcs11js.CKM_SHA512, mgf: pkcs11js.CKG_MGF1_SHA512 },
};

/** A call of the PKCS#11 library not answered this long fails (its process is stopped): the seal is unavailable, and the service stays sealed and tries again. */
export const PKCS11_SEAL_CALL_TIMEOUT_MS = 10_000;
/** Generating the seal's key, once at initialization, may take longer (an RSA pair on a busy host). */
const KEY_GENERATION_TIMEOUT_MS = 60_000;

/** The library reports the session or the login gone (token reinserted, HSM restarted): start it afresh and retry once. */
const SESSION_LOST = new Set([
  pkcs11js.CKR_SESSION_HANDLE_INVALID,
  pkcs11js.CKR_SESSION_CLOSED,
  pkcs11js.CKR_USER_NOT_LOGGED_IN,
  pkcs11js.CKR_DEVICE_REMOVED,
  pkcs11js.CKR_DEVICE_ERROR,
  pkcs11js.CKR_TOKEN_NOT_PRESENT,
  pkcs11js.CKR_CRYPTOKI_NOT_INITIALIZED,
]);

/** Refusals of the PIN: trying again cannot help and, on a real HSM, counts towards locking the token. */
const PIN_REFUSED = new Set([pkcs11js.CKR_PIN_INCORRECT, pkcs11js.CKR_PIN_INVALID, pkcs11js.CKR_PIN_LEN_RANGE, pkcs11js.CKR_PIN_LOCKED, pkcs11js.CKR_PIN_EXPIRED]);

/**
 * Wraps the root key with a key held in an HSM. The library runs in a child process of the
 * wrapper's (Pkcs11LibraryProcess), where one session is opened and logged in on first use and reused for
 * every call (calls are serialized, as a session runs one operation at a time). Each call of the
 * library has a deadline; one not met stops that process, and the next call starts another, which
 * opens and logs in again, as does a library that reports the session closed. The PIN goes to
 * C_Login only, never to a message.
 */
export class Pkcs11KeyWrapper implements RootKeyWrapper {
  readonly type = 'pkcs11';
  /** The library's process and its logged-in session, once opened. */
  private opened?: { library: Pkcs11LibraryProcess; session: pkcs11js.Handle };
  /** Set once the token refused the PIN: later calls fail with it instead of logging in again. */
  private pinRefusal?: SealUnavailableError;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(private readonly config: Pkcs11SealConfig) {}

  start(): void {
    // The library's process starts on first use; nothing runs in the background.
  }

  wrap(plaintext: Buffer): Promise<Buffer> {
    return this.withSession('encrypt the root key', async (library, session) => {
      const key = (await this.findConfiguredKey(library, session)) ?? (await this.generateKey(library, session));
      const wrapped: WrappedRootKey = {
        mechanism: key.mechanism,
        ...(key.label !== undefined && { key_label: key.label }),
        ...(key.id !== undefined && { key_id: key.id }),
        ciphertext: '',
      };
      if (key.mechanism === 'CKM_AES_GCM') wrapped.iv = randomBytes(GCM_IV_BYTES).toString('base64');
      else wrapped.hash = this.config.rsaOaepHash;
      await library.call('C_EncryptInit', session, mechanismOf(wrapped), key.encrypt);
      wrapped.ciphertext = (await library.call('C_Encrypt', session, plaintext, Buffer.alloc(plaintext.length + 1024))).toString('base64');
      return Buffer.from(JSON.stringify(wrapped), 'utf8');
    });
  }

  unwrap(ciphertext: Buffer): Promise<Buffer> {
    const wrapped = parseWrapped(ciphertext);
    return this.withSession('decrypt the root key', async (library, session) => {
      const key = await findKey(library, session, wrapped.mechanism, wrapped.key_label, wrapped.key_id);
      if (!key) throw new SealUnavailableError(`pkcs11 seal: the key that encrypted the root key (${describeKey(wrapped.key_label, wrapped.key_id)}) is not on ${this.tokenName()}`);
      await library.call('C_DecryptInit', session, mechanismOf(wrapped), key.decrypt);
      const data = Buffer.from(wrapped.ciphertext, 'base64');
      return library.call('C_Decrypt', session, data, Buffer.alloc(data.length + 1024));
    });
  }

  close(): void {
    this.closed = true;
    this.queue = this.queue.then(() => this.release(), () => this.release());
  }

  /**
   * Runs `operation` in the logged-in session, one call at a time. A session the library reports
   * lost is replaced once; library errors (and deadlines missed) become SealUnavailableError naming
   * the step and the PKCS#11 return code (or the call not answered).
   */
  private withSession<T>(step: string, operation: (library: Pkcs11LibraryProcess, session: pkcs11js.Handle) => Promise<T>): Promise<T> {
    const run = this.queue.then(async () => {
      if (this.closed) throw new SealUnavailableError('pkcs11 seal: the seal is closed');
      try {
        return await operation(...(await this.openSession()));
      } catch (err) {
        if (!(err instanceof pkcs11js.Pkcs11Error) || !SESSION_LOST.has(err.code)) throw this.describe(step, err);
        await this.release();
        try {
          return await operation(...(await this.openSession()));
        } catch (retried) {
          throw this.describe(step, retried);
        }
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** The open session, or a new process of the library with a session logged in (the last one stopped, or never started). */
  private async openSession(): Promise<[Pkcs11LibraryProcess, pkcs11js.Handle]> {
    if (this.pinRefusal) throw this.pinRefusal;
    if (this.opened?.library.running) return [this.opened.library, this.opened.session];
    this.opened = undefined;
    const library = new Pkcs11LibraryProcess(this.config.lib, PKCS11_SEAL_CALL_TIMEOUT_MS, { C_GenerateKey: KEY_GENERATION_TIMEOUT_MS, C_GenerateKeyPair: KEY_GENERATION_TIMEOUT_MS });
    try {
      await library.call('load', this.config.lib);
      await library.call('C_Initialize', { flags: pkcs11js.CKF_OS_LOCKING_OK });
      const slot = await this.findSlot(library);
      const flags = pkcs11js.CKF_SERIAL_SESSION | (this.config.generateKey ? pkcs11js.CKF_RW_SESSION : 0);
      const session = await library.call('C_OpenSession', slot, flags);
      await this.logIn(library, session);
      this.opened = { library, session };
      return [library, session];
    } catch (err) {
      library.stop();
      throw err;
    }
  }

  private async logIn(library: Pkcs11LibraryProcess, session: pkcs11js.Handle): Promise<void> {
    try {
      await library.call('C_Login', session, pkcs11js.CKU_USER, this.config.pin);
    } catch (err) {
      if (!(err instanceof pkcs11js.Pkcs11Error)) throw err;
      if (err.code === pkcs11js.CKR_USER_ALREADY_LOGGED_IN) return;
      if (PIN_REFUSED.has(err.code)) {
        this.pinRefusal = new SealUnavailableError(
          `pkcs11 seal: ${this.tokenName()} refused the PIN (${err.message}); correct "pin" (or SVC_HSM_PIN) and restart the server — it does not log in again, so the token is not locked`,
        );
        throw this.pinRefusal;
      }
      throw err;
    }
  }

  /** Finalizes the library (which closes its sessions, logging out) and stops its process. */
  private async release(): Promise<void> {
    const opened = this.opened;
    this.opened = undefined;
    if (!opened) return;
    try {
      await opened.library.call('C_Finalize');
    } catch {
      // The library already dropped the session (that is why we are here) or did not answer: its process goes all the same.
    }
    opened.library.stop();
  }

  private async findSlot(library: Pkcs11LibraryProcess): Promise<pkcs11js.Handle> {
    const slots = await library.call('C_GetSlotList', true);
    const { slot, tokenLabel } = this.config;
    for (const handle of slots) {
      const matches = slot !== undefined ? handleNumber(handle) === BigInt(slot) : (await library.call('C_GetTokenInfo', handle)).label.trimEnd() === tokenLabel;
      if (matches) return handle;
    }
    throw new SealUnavailableError(`pkcs11 seal: ${this.tokenName()} is not present (${this.config.lib} lists ${slots.length} slot(s) with a token)`);
  }

  private async findConfiguredKey(library: Pkcs11LibraryProcess, session: pkcs11js.Handle): Promise<TokenKey | undefined> {
    const { keyLabel, keyId, mechanism } = this.config;
    const key = await findKey(library, session, mechanism, keyLabel, keyId);
    if (!key && !this.config.generateKey) {
      throw new SealUnavailableError(`pkcs11 seal: no key ${describeKey(keyLabel, keyId)} on ${this.tokenName()}; create it on the token or set generate_key = "true"`);
    }
    return key;
  }

  /** Creates the configured key, non-extractable and sensitive as a root-key wrapping key should be. */
  private async generateKey(library: Pkcs11LibraryProcess, session: pkcs11js.Handle): Promise<TokenKey> {
    const label = this.config.keyLabel ?? '';
    const id = Buffer.from(this.config.keyId ?? randomBytes(8).toString('hex'), 'hex');
    const naming = [
      { type: pkcs11js.CKA_LABEL, value: label },
      { type: pkcs11js.CKA_ID, value: id },
      { type: pkcs11js.CKA_TOKEN, value: true },
    ];
    const secret = [...naming, { type: pkcs11js.CKA_PRIVATE, value: true }, { type: pkcs11js.CKA_SENSITIVE, value: true }, { type: pkcs11js.CKA_EXTRACTABLE, value: false }];
    const named = { label, id: id.toString('hex') };
    if (this.config.mechanism === 'CKM_RSA_PKCS_OAEP') {
      const pair = await library.call(
        'C_GenerateKeyPair',
        session,
        { mechanism: pkcs11js.CKM_RSA_PKCS_KEY_PAIR_GEN },
        [...naming, { type: pkcs11js.CKA_ENCRYPT, value: true }, { type: pkcs11js.CKA_MODULUS_BITS, value: RSA_GENERATED_BITS }, { type: pkcs11js.CKA_PUBLIC_EXPONENT, value: Buffer.from([1, 0, 1]) }],
        [...secret, { type: pkcs11js.CKA_DECRYPT, value: true }],
      );
      return { mechanism: 'CKM_RSA_PKCS_OAEP', encrypt: pair.publicKey, decrypt: pair.privateKey, ...named };
    }
    const key = await library.call('C_GenerateKey', session, { mechanism: pkcs11js.CKM_AES_KEY_GEN }, [
      ...secret,
      { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
      { type: pkcs11js.CKA_KEY_TYPE, value: pkcs11js.CKK_AES },
      { type: pkcs11js.CKA_VALUE_LEN, value: AES_KEY_BYTES },
      { type: pkcs11js.CKA_ENCRYPT, value: true },
      { type: pkcs11js.CKA_DECRYPT, value: true },
    ]);
    return { mechanism: 'CKM_AES_GCM', encrypt: key, decrypt: key, ...named };
  }

  private tokenName(): string {
    return this.config.slot !== undefined ? `slot ${this.config.slot}` : `the token labelled "${this.config.tokenLabel}"`;
  }

  /** The step and the library's return code (or the call it did not answer); these messages hold no PIN or key material. */
  private describe(step: string, err: unknown): Error {
    if (err instanceof SealUnavailableError) return err;
    const reason = err instanceof Error ? err.message : String(err);
    return new SealUnavailableError(`pkcs11 seal: could not ${step} on ${this.tokenName()}: ${reason}`, { cause: err });
  }
}

/** A slot handle (CK_ULONG in the platform's byte order, little-endian here) as a number. */
function handleNumber(handle: pkcs11js.Handle): bigint {
  return handle.length >= 8 ? handle.readBigUInt64LE(0) : BigInt(handle.readUInt32LE(0));
}

function describeKey(label: string | undefined, id: string | undefined): string {
  return [label !== undefined && `labelled "${label}"`, id !== undefined && `with id ${id}`].filter(Boolean).join(' ');
}

/**
 * The key named by label and/or id: an AES secret key, or an RSA private key and its public key.
 * With `mechanism` unset, the key's type chooses it.
 */
async function findKey(library: Pkcs11LibraryProcess, session: pkcs11js.Handle, mechanism: Pkcs11Mechanism | undefined, label?: string, id?: string): Promise<TokenKey | undefined> {
  const naming: pkcs11js.Template = [
    ...(label !== undefined ? [{ type: pkcs11js.CKA_LABEL, value: label }] : []),
    ...(id !== undefined ? [{ type: pkcs11js.CKA_ID, value: Buffer.from(id, 'hex') }] : []),
  ];
  const find = async (objectClass: number, keyType: number) => {
    await library.call('C_FindObjectsInit', session, [...naming, { type: pkcs11js.CKA_CLASS, value: objectClass }, { type: pkcs11js.CKA_KEY_TYPE, value: keyType }]);
    try {
      return (await library.call('C_FindObjects', session)) ?? undefined;
    } finally {
      // A process stopped at a deadline answers nothing more; its error is the one to report.
      if (library.running) await library.call('C_FindObjectsFinal', session);
    }
  };
  const named = { ...(label !== undefined && { label }), ...(id !== undefined && { id }) };
  if (mechanism !== 'CKM_RSA_PKCS_OAEP') {
    const secret = await find(pkcs11js.CKO_SECRET_KEY, pkcs11js.CKK_AES);
    if (secret) return { mechanism: 'CKM_AES_GCM', encrypt: secret, decrypt: secret, ...named };
  }
  if (mechanism !== 'CKM_AES_GCM') {
    const privateKey = await find(pkcs11js.CKO_PRIVATE_KEY, pkcs11js.CKK_RSA);
    const publicKey = await find(pkcs11js.CKO_PUBLIC_KEY, pkcs11js.CKK_RSA);
    if (privateKey && publicKey) return { mechanism: 'CKM_RSA_PKCS_OAEP', encrypt: publicKey, decrypt: privateKey, ...named };
  }
  return undefined;
}

function mechanismOf(wrapped: WrappedRootKey): pkcs11js.Mechanism {
  if (wrapped.mechanism === 'CKM_AES_GCM') {
    const params: pkcs11js.GcmParams = { type: pkcs11js.CK_PARAMS_GCM, iv: Buffer.from(wrapped.iv ?? '', 'base64'), ivBits: GCM_IV_BYTES * 8, tagBits: GCM_TAG_BITS };
    return { mechanism: pkcs11js.CKM_AES_GCM, parameter: params };
  }
  const params: RsaOaepParams = { type: pkcs11js.CK_PARAMS_RSA_OAEP, ...OAEP_HASHES[wrapped.hash ?? 'sha256'], source: CKZ_DATA_SPECIFIED };
  return { mechanism: pkcs11js.CKM_RSA_PKCS_OAEP, parameter: params };
}

function parseWrapped(ciphertext: Buffer): WrappedRootKey {
  try {
    const wrapped = JSON.parse(ciphertext.toString('utf8')) as WrappedRootKey;
    if ((wrapped.mechanism === 'CKM_AES_GCM' || wrapped.mechanism === 'CKM_RSA_PKCS_OAEP') && typeof wrapped.ciphertext === 'string') return wrapped;
  } catch {
    // Reported below.
  }
  throw new Error('seal storage holds a root key the pkcs11 seal did not write');
}
