/**
 * An auto-unseal seal's outside protection of the root key (a transit engine, a KMS, an HSM):
 * `wrap` encrypts it for storage and `unwrap` gives it back, each a call to the provider.
 */
export interface RootKeyWrapper {
  /** The seal type as `sys/seal-status` reports it. */
  readonly type: string;
  wrap(plaintext: Buffer): Promise<Buffer>;
  unwrap(ciphertext: Buffer): Promise<Buffer>;
  /** Starts background work (token renewal). */
  start(): void;
  /** Stops background work; the wrapper is not used afterwards. */
  close(): void;
}

/**
 * The provider could not be reached or refused the call. The message names the provider and what
 * failed, never key material, so it can go to the log and into a 503.
 */
export class SealUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SealUnavailableError';
  }
}
