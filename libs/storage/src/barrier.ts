import { ReadOnlyReplicatedStorageError, ServiceError } from '@svc/api-contract';
import { BarrierCipher } from './barrier-cipher';
import { writeIfUnchangedInTransaction } from './conditional-write';
import type { Keyring } from './keyring';
import { ReadStamp, type ConditionalWrite, type KeyValueStore, type SharedDecoder, type StampedValue, type Transaction, type TransactionalStore, type WriteEvent } from './types';

export type WriteListener = (event: WriteEvent) => void;
/** Whether this process may write a barrier key (a performance secondary writes only its local keys). */
export type WriteGuard = (key: string) => boolean;

/** A stored value (null: absent) decoded and shared (see SharedDecoder). */
function decodeStored<T>(cipher: BarrierCipher, key: string, blob: Buffer | null, decode: SharedDecoder<T>): T | null {
  return blob === null ? null : cipher.decode(key, blob, decode);
}

/** Encrypting operations over a physical store or one of its transactions. */
class EncryptedOperations<Inner extends KeyValueStore> implements KeyValueStore {
  constructor(
    protected readonly inner: Inner,
    protected readonly cipher: () => BarrierCipher,
    private readonly written: (event: WriteEvent) => void,
    private readonly writable: WriteGuard,
  ) {}

  async get(key: string): Promise<Buffer | null> {
    const cipher = this.cipher();
    const blob = await this.inner.get(key);
    return blob === null ? null : cipher.decrypt(key, blob);
  }

  async put(key: string, value: Buffer): Promise<void> {
    if (!this.writable(key)) throw new ReadOnlyReplicatedStorageError();
    await this.inner.put(key, this.cipher().encrypt(key, value));
    this.written({ op: 'put', key });
  }

  async delete(key: string): Promise<void> {
    this.cipher();
    if (!this.writable(key)) throw new ReadOnlyReplicatedStorageError();
    await this.inner.delete(key);
    this.written({ op: 'delete', key });
  }

  async list(prefix: string): Promise<string[]> {
    this.cipher();
    return this.inner.list(prefix);
  }
}

class EncryptedTransaction extends EncryptedOperations<Transaction> implements Transaction {
  async lock(key: string): Promise<void> {
    this.cipher();
    return this.inner.lock(key);
  }
}

/**
 * The encryption barrier over a physical store (see barrier-cipher.ts for the value layout).
 * Sealed, every operation answers 503. Every committed write is reported to the `onWrite`
 * listeners from one place (`notify`): single writes once stored, transaction writes in order
 * once the transaction has committed, none for a rolled-back transaction.
 */
export class Barrier implements TransactionalStore {
  private cipher: BarrierCipher | undefined;
  private readonly listeners = new Set<WriteListener>();
  private guard: WriteGuard = () => true;
  private readonly writable: WriteGuard = (key) => this.guard(key);
  private readonly direct: EncryptedOperations<KeyValueStore>;
  private readonly requireCipher = (): BarrierCipher => {
    if (!this.cipher) throw ServiceError.sealed();
    return this.cipher;
  };

  constructor(private readonly physical: TransactionalStore) {
    this.direct = new EncryptedOperations(physical, this.requireCipher, (event) => this.notify([event]), this.writable);
  }

  /**
   * Decides which keys may be written through this barrier; a refused write throws
   * `ReadOnlyReplicatedStorageError` before anything is stored. Writes below the barrier (a
   * secondary applying its primary's log) are not subject to it.
   */
  setWriteGuard(guard: WriteGuard | undefined): void {
    this.guard = guard ?? (() => true);
  }

  /** Whether a write of `key` would be accepted: background work asks before writing. */
  canWrite(key: string): boolean {
    return this.guard(key);
  }

  get sealed(): boolean {
    return this.cipher === undefined;
  }

  /** The keyring in use; 503 while sealed. */
  get keyring(): Keyring {
    return this.requireCipher().keyring;
  }

  /** Installs the keyring; called again with a rotated keyring, new writes use its new term. */
  unseal(keyring: Keyring): void {
    this.cipher = new BarrierCipher(keyring);
  }

  seal(): void {
    this.cipher = undefined;
  }

  /**
   * Listeners run synchronously after each committed write and must not throw: if one does, the
   * others still run and the first error reaches the writer (whose write has happened).
   * Returns the function that removes the listener.
   */
  onWrite(listener: WriteListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get(key: string): Promise<Buffer | null> {
    return this.direct.get(key);
  }

  /** A cached value is decoded at once, without an async frame: the hot read path allocates as little as it can. */
  getDecoded<T>(key: string, decode: SharedDecoder<T>): Promise<T | null> {
    try {
      const cached = this.peekDecoded(key, decode);
      if (cached !== undefined) return Promise.resolve(cached);
      const cipher = this.requireCipher();
      return this.physical.get(key).then((blob) => decodeStored(cipher, key, blob, decode));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** `getDecoded` from the physical store's read cache alone: undefined when it holds nothing of the key. */
  peekDecoded<T>(key: string, decode: SharedDecoder<T>): T | null | undefined {
    const cipher = this.requireCipher();
    const blob = this.physical.peek?.(key);
    if (blob === undefined) return undefined;
    return decodeStored(cipher, key, blob, decode);
  }

  /** The stamp is the stored ciphertext: a rewrite of the same plaintext is a change too (new nonce). */
  async getStamped<T>(key: string, decode: SharedDecoder<T>): Promise<StampedValue<T>> {
    const cipher = this.requireCipher();
    const blob = await this.physical.get(key);
    return { value: decodeStored(cipher, key, blob, decode), stamp: new ReadStamp(blob) };
  }

  /** `getStamped` from the physical store's read cache alone: undefined when it holds nothing of the key. */
  peekStamped<T>(key: string, decode: SharedDecoder<T>): StampedValue<T> | undefined {
    const cipher = this.requireCipher();
    const blob = this.physical.peek?.(key);
    if (blob === undefined) return undefined;
    return { value: decodeStored(cipher, key, blob, decode), stamp: new ReadStamp(blob) };
  }

  /** Written values are encrypted and guarded like a transaction's, and reported once written. */
  async writeIfUnchanged({ locks, unchanged, writes }: ConditionalWrite): Promise<boolean> {
    const cipher = this.requireCipher();
    const encrypted = new Map<string, Buffer | null>();
    for (const [key, value] of writes) {
      if (!this.writable(key)) throw new ReadOnlyReplicatedStorageError();
      encrypted.set(key, value === null ? null : cipher.encrypt(key, value));
    }
    const write = { locks, unchanged, writes: encrypted };
    const written = await (this.physical.writeIfUnchanged ? this.physical.writeIfUnchanged(write) : writeIfUnchangedInTransaction(this.physical, write));
    if (written) this.notify([...writes].map(([key, value]) => ({ op: value === null ? 'delete' : 'put', key })));
    return written;
  }

  async put(key: string, value: Buffer): Promise<void> {
    return this.direct.put(key, value);
  }

  async delete(key: string): Promise<void> {
    return this.direct.delete(key);
  }

  async list(prefix: string): Promise<string[]> {
    return this.direct.list(prefix);
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    this.requireCipher();
    const events: WriteEvent[] = [];
    const result = await this.physical.transaction((tx) =>
      fn(new EncryptedTransaction(tx, this.requireCipher, (event) => events.push(event), this.writable)),
    );
    this.notify(events);
    return result;
  }

  private notify(events: WriteEvent[]): void {
    let failure: unknown;
    for (const event of events) {
      for (const listener of this.listeners) {
        try {
          listener(event);
        } catch (error) {
          failure ??= error;
        }
      }
    }
    if (failure !== undefined) throw failure;
  }
}
