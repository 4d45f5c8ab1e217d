import { type RootKeyWrapper, SealUnavailableError } from './key-wrapper';

/** `seal "transit"`: another Secrets Service's transit engine holds the key that wraps the root key. */
export interface TransitSealConfig {
  type: 'transit';
  /** Base URL of the other service, e.g. https://seal.example.com:8200. */
  address: string;
  token: string;
  keyName: string;
  /** Where the transit engine is mounted; default `transit`. */
  mountPath: string;
  namespace?: string;
  /** The token is renewed at half its TTL unless this is set (a periodic or root token needs none). */
  disableRenewal: boolean;
}

const REQUEST_TIMEOUT_MS = 10_000;
/** Renewal retries this often after a failed renewal, so a short outage does not let the token expire. */
const RENEWAL_RETRY_MS = 10_000;

interface TransitAnswer {
  data?: { ciphertext?: string; plaintext?: string };
  auth?: { lease_duration?: number; renewable?: boolean };
  errors?: string[];
}

/** Wraps the root key with `<mount>/encrypt/<key>` and unwraps it with `<mount>/decrypt/<key>`. */
export class TransitKeyWrapper implements RootKeyWrapper {
  readonly type = 'transit';
  private renewalTimer?: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly config: TransitSealConfig,
    /** Told when a renewal fails; the wrapper keeps trying. */
    private readonly onRenewalError: (err: Error) => void = () => undefined,
  ) {}

  /** Starts renewing the token (unless disabled): the first renewal tells how long it lives. */
  start(): void {
    if (this.config.disableRenewal || this.closed) return;
    this.scheduleRenewal(0);
  }

  async wrap(plaintext: Buffer): Promise<Buffer> {
    const answer = await this.call('encrypt', { plaintext: plaintext.toString('base64') });
    const ciphertext = answer.data?.ciphertext;
    if (!ciphertext) throw new SealUnavailableError(`transit seal at ${this.config.address}: encrypt answered without a ciphertext`);
    return Buffer.from(ciphertext, 'utf8');
  }

  async unwrap(ciphertext: Buffer): Promise<Buffer> {
    const answer = await this.call('decrypt', { ciphertext: ciphertext.toString('utf8') });
    const plaintext = answer.data?.plaintext;
    if (plaintext === undefined) throw new SealUnavailableError(`transit seal at ${this.config.address}: decrypt answered without a plaintext`);
    return Buffer.from(plaintext, 'base64');
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.renewalTimer);
  }

  private call(operation: 'encrypt' | 'decrypt', body: Record<string, string>): Promise<TransitAnswer> {
    const mount = this.config.mountPath.replace(/^\/+|\/+$/g, '');
    return this.send('POST', `${mount}/${operation}/${encodeURIComponent(this.config.keyName)}`, body);
  }

  private scheduleRenewal(delayMs: number): void {
    this.renewalTimer = setTimeout(() => {
      this.send('POST', 'auth/token/renew-self', {}).then(
        (answer) => {
          const ttlSeconds = answer.auth?.lease_duration ?? 0;
          // A token that does not expire (root) or cannot be renewed needs no further renewal.
          if (ttlSeconds > 0 && answer.auth?.renewable !== false && !this.closed) this.scheduleRenewal((ttlSeconds * 1000) / 2);
        },
        (err: Error) => {
          this.onRenewalError(err);
          if (!this.closed) this.scheduleRenewal(RENEWAL_RETRY_MS);
        },
      );
    }, delayMs);
    this.renewalTimer.unref();
  }

  private async send(method: string, path: string, body: Record<string, string>): Promise<TransitAnswer> {
    const where = `transit seal at ${this.config.address} (${path})`;
    let response: Response;
    try {
      response = await fetch(`${this.config.address.replace(/\/+$/, '')}/v1/${path}`, {
        method,
        headers: {
          'Content-Type': 'application/json',
          'X-Service-Request': 'true',
          'X-Service-Token': this.config.token,
          ...(this.config.namespace && { 'X-Service-Namespace': this.config.namespace }),
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      throw new SealUnavailableError(`${where}: unreachable: ${(err as Error).message}`, { cause: err });
    }
    const answer = (await response.json().catch(() => ({}))) as TransitAnswer;
    if (!response.ok) {
      const reason = answer.errors?.join('; ') || 'no error message';
      throw new SealUnavailableError(`${where}: answered ${response.status}: ${reason}`);
    }
    return answer;
  }
}
