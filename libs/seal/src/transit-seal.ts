import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { withDeadline } from '@svc/api-contract';
import { type RootKeyWrapper, SealUnavailableError } from './key-wrapper';

/** How the seal reaches an https:// address, Vault's `tls_*` fields (files in PEM). */
export interface TransitSealTls {
  /** CA certificate(s) to trust instead of the system's. */
  caCert?: string;
  /** Certificate and key presented to a server that asks for one (mutual TLS). */
  clientCert?: string;
  clientKey?: string;
  /** Name to verify the server's certificate against (and send as SNI), instead of the address's host. */
  serverName?: string;
  /** Accepts any certificate: for tests only. */
  skipVerify?: boolean;
}

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
  tls?: TransitSealTls;
}

/** A call to the provider not answered in full this long fails: the seal is unavailable, and the service stays sealed and tries again. */
export const TRANSIT_SEAL_REQUEST_TIMEOUT_MS = 10_000;
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
  /** Certificates and options for an https:// address, read once. */
  private readonly tlsOptions: RequestOptions;

  constructor(
    private readonly config: TransitSealConfig,
    /** Told when a renewal fails; the wrapper keeps trying. */
    private readonly onRenewalError: (err: Error) => void = () => undefined,
  ) {
    const tls = config.tls ?? {};
    const read = (file: string | undefined) => (file === undefined ? undefined : readFileSync(file));
    this.tlsOptions = {
      ca: read(tls.caCert),
      cert: read(tls.clientCert),
      key: read(tls.clientKey),
      servername: tls.serverName,
      rejectUnauthorized: !tls.skipVerify,
    };
  }

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
    let response: { status: number; text: string };
    try {
      response = await this.request(method, `${this.config.address.replace(/\/+$/, '')}/v1/${path}`, JSON.stringify(body));
    } catch (err) {
      // Node names TLS failures by code (UNABLE_TO_VERIFY_LEAF_SIGNATURE, ERR_TLS_CERT_ALTNAME_INVALID, ...).
      const { code, message } = err as NodeJS.ErrnoException;
      throw new SealUnavailableError(`${where}: unreachable: ${message}${code && !message.includes(code) ? ` (${code})` : ''}`, { cause: err });
    }
    let answer: TransitAnswer = {};
    try {
      answer = JSON.parse(response.text) as TransitAnswer;
    } catch {
      // Not JSON (a proxy's error page): the status says enough.
    }
    if (response.status < 200 || response.status >= 300) {
      const reason = answer.errors?.join('; ') || 'no error message';
      throw new SealUnavailableError(`${where}: answered ${response.status}: ${reason}`);
    }
    return answer;
  }

  /** One HTTP(S) request with the seal's TLS options; node:https because fetch takes no per-request CA or client certificate. */
  private request(method: string, url: string, body: string): Promise<{ status: number; text: string }> {
    const send = url.startsWith('https:') ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(
        url,
        {
          method,
          headers: {
            'Content-Type': 'application/json',
            'Content-Length': Buffer.byteLength(body),
            'X-Service-Request': 'true',
            'X-Service-Token': this.config.token,
            ...(this.config.namespace && { 'X-Service-Namespace': this.config.namespace }),
          },
          ...(url.startsWith('https:') && this.tlsOptions),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      withDeadline(req, TRANSIT_SEAL_REQUEST_TIMEOUT_MS).on('error', reject);
      req.end(body);
    });
  }
}
