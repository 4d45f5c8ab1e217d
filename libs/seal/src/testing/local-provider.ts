import { randomBytes } from 'node:crypto';
import { aeadDecrypt, aeadEncrypt } from '../aead';
import { type RootKeyWrapper, SealUnavailableError } from '../key-wrapper';

/** A provider holding its key in memory; `reachable` stands for the network between us and it. */
export class LocalProvider implements RootKeyWrapper {
  reachable = true;
  private readonly key = randomBytes(32);

  constructor(readonly type = 'transit') {}

  async wrap(plaintext: Buffer): Promise<Buffer> {
    this.check();
    return aeadEncrypt(this.key, plaintext, 'provider');
  }

  async unwrap(ciphertext: Buffer): Promise<Buffer> {
    this.check();
    return aeadDecrypt(this.key, ciphertext, 'provider');
  }

  start(): void {}
  close(): void {}

  private check(): void {
    if (!this.reachable) throw new SealUnavailableError(`${this.type} provider unreachable`);
  }
}
