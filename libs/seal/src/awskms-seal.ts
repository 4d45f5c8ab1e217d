import { randomBytes } from 'node:crypto';
import type * as Kms from '@aws-sdk/client-kms';
import { boundedRequestHandler } from '@svc/api-contract';
import { aeadDecrypt, aeadEncrypt } from './aead';
import { type RootKeyWrapper, SealUnavailableError } from './key-wrapper';

/** `seal "awskms"`: an AWS KMS key protects the root key. Unset credentials come from the SDK's chain (AWS_* variables, profile, instance role). */
export interface AwsKmsSealConfig {
  type: 'awskms';
  /** Key id, key ARN, alias name (`alias/...`) or alias ARN. */
  kmsKeyId: string;
  region?: string;
  accessKey?: string;
  secretKey?: string;
  sessionToken?: string;
  /** The KMS API endpoint instead of AWS's (a VPC endpoint, a KMS-compatible service). */
  endpoint?: string;
}

/** Vault's default when neither the configuration nor the environment names a region. */
const DEFAULT_REGION = 'us-east-1';
/** A KMS call with no connection, or no answer, this long fails: the seal says so and the service stays sealed and tries again. */
export const AWSKMS_REQUEST_TIMEOUT_MS = 10_000;
const DATA_KEY_BYTES = 32;
/** Binds the locally encrypted root key to this use. */
const ENVELOPE_AAD = 'awskms-seal-root-key';

/**
 * What `core/root-key` holds with this seal: the root key encrypted locally under a data key, and
 * the data key encrypted by KMS. `key_id` is the KMS key (ARN) that encrypted it, kept so an
 * operator can tell which key a stored value needs; KMS finds the key from the blob itself, so a
 * rotated key (or an alias moved to another key) still decrypts it.
 */
interface Envelope {
  key_id: string;
  wrapped_key: string;
  ciphertext: string;
}

/** Envelope encryption as Vault's awskms seal does it: KMS encrypts a fresh data key, AES-256-GCM the root key. */
export class AwsKmsKeyWrapper implements RootKeyWrapper {
  readonly type = 'awskms';
  private readonly clientConfig: Kms.KMSClientConfig;
  /** The SDK is loaded by the servers sealed with KMS only, when the seal is first used. */
  private client?: Promise<{ kms: typeof Kms; client: Kms.KMSClient }>;

  constructor(
    private readonly config: AwsKmsSealConfig,
    environment: NodeJS.ProcessEnv = process.env,
  ) {
    this.clientConfig = {
      region: config.region ?? (environment.AWS_REGION || environment.AWS_DEFAULT_REGION || DEFAULT_REGION),
      requestHandler: boundedRequestHandler(AWSKMS_REQUEST_TIMEOUT_MS, AWSKMS_REQUEST_TIMEOUT_MS),
      // The service retries on its own schedule while sealed; one quick attempt per try is enough.
      maxAttempts: 1,
      ...(config.endpoint && { endpoint: config.endpoint }),
      ...(config.accessKey && config.secretKey && {
        credentials: { accessKeyId: config.accessKey, secretAccessKey: config.secretKey, ...(config.sessionToken && { sessionToken: config.sessionToken }) },
      }),
    };
  }

  private connect(): Promise<{ kms: typeof Kms; client: Kms.KMSClient }> {
    return (this.client ??= import('@aws-sdk/client-kms').then((kms) => ({ kms, client: new kms.KMSClient(this.clientConfig) })));
  }

  async wrap(plaintext: Buffer): Promise<Buffer> {
    const dataKey = randomBytes(DATA_KEY_BYTES);
    try {
      const { kms, client } = await this.connect();
      const answer = await this.call('Encrypt', () => client.send(new kms.EncryptCommand({ KeyId: this.config.kmsKeyId, Plaintext: dataKey })));
      if (!answer.CiphertextBlob || !answer.KeyId) throw new SealUnavailableError(`${this.where()}: Encrypt answered without a ciphertext`);
      const envelope: Envelope = {
        key_id: answer.KeyId,
        wrapped_key: Buffer.from(answer.CiphertextBlob).toString('base64'),
        ciphertext: aeadEncrypt(dataKey, plaintext, ENVELOPE_AAD).toString('base64'),
      };
      return Buffer.from(JSON.stringify(envelope), 'utf8');
    } finally {
      dataKey.fill(0);
    }
  }

  async unwrap(stored: Buffer): Promise<Buffer> {
    const envelope = JSON.parse(stored.toString('utf8')) as Envelope;
    const { kms, client } = await this.connect();
    const answer = await this.call('Decrypt', () => client.send(new kms.DecryptCommand({ CiphertextBlob: Buffer.from(envelope.wrapped_key, 'base64') })));
    if (!answer.Plaintext) throw new SealUnavailableError(`${this.where()}: Decrypt answered without a plaintext`);
    const dataKey = Buffer.from(answer.Plaintext);
    try {
      return aeadDecrypt(dataKey, Buffer.from(envelope.ciphertext, 'base64'), ENVELOPE_AAD);
    } finally {
      dataKey.fill(0);
      answer.Plaintext.fill(0);
    }
  }

  start(): void {
    // Credentials are the SDK's to refresh; nothing runs in the background.
  }

  close(): void {
    void this.client?.then(({ client }) => client.destroy());
  }

  private where(): string {
    return `awskms seal (key ${this.config.kmsKeyId}${this.config.endpoint ? ` at ${this.config.endpoint}` : ''})`;
  }

  /** Any failure of KMS (unreachable, refused, a disabled key) is the seal being unavailable; its message carries no key material. */
  private async call<T>(operation: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (err) {
      const error = err as Error & { $metadata?: { httpStatusCode?: number } };
      const status = error.$metadata?.httpStatusCode;
      throw new SealUnavailableError(`${this.where()}: ${operation} failed: ${error.name}${status ? ` (${status})` : ''}: ${error.message}`, { cause: err });
    }
  }
}
