import { createReadStream } from 'node:fs';
import { DeleteObjectCommand, PutObjectCommand, S3Client, paginateListObjectsV2, type PutObjectCommandInput } from '@aws-sdk/client-s3';
import { cloudCredentials } from '@svc/config';
import type { SnapshotFile } from '../archive';
import type { SnapshotConfig } from '../config';
import { ObjectTarget, TARGET_CALL_TIMEOUT_MS, withScheme, withTimeout, writeTimeoutMs } from './object-target';

/**
 * An S3 bucket (`cloud-objstore`) through @aws-sdk/client-s3. Credentials are the configuration's,
 * then CLOUD_ACCESS_KEY/CLOUD_SECRET_KEY, then the SDK's own chain (environment, profile, role).
 */
export class S3Target extends ObjectTarget {
  private readonly client: S3Client;
  private readonly bucket: string;

  constructor(config: SnapshotConfig) {
    super(config);
    this.bucket = config.cloud_objstore_bucket!;
    const credentials = cloudCredentials(config.cloud_access_key_id, config.cloud_secret_access_key);
    this.client = new S3Client({
      region: config.cloud_objstore_region,
      endpoint: config.cloud_objstore_endpoint && withScheme(config.cloud_objstore_endpoint, config.cloud_objstore_disable_tls),
      forcePathStyle: config.cloud_objstore_force_path_style,
      // A silent connection fails; an answer is not timed from the request's start, which would
      // count a large upload's sending against it (the write has its own deadline).
      requestHandler: { connectionTimeout: TARGET_CALL_TIMEOUT_MS, socketTimeout: TARGET_CALL_TIMEOUT_MS },
      credentials: credentials && { ...credentials, sessionToken: config.cloud_access_key_id ? config.cloud_session_token : undefined },
      // S3-compatible stores (and the SDK's default aws-chunked uploads through them) need the
      // checksums only where the API requires them.
      ...(config.cloud_objstore_endpoint ? { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' } : {}),
    });
  }

  url(name: string): string {
    return `s3://${this.bucket}/${this.key(name)}`;
  }

  async write(name: string, file: SnapshotFile): Promise<void> {
    const input: PutObjectCommandInput = { Bucket: this.bucket, Key: this.key(name), Body: createReadStream(file.path), ContentLength: file.size, ContentType: 'application/gzip' };
    if (this.config.cloud_objstore_enable_kms) {
      input.ServerSideEncryption = 'aws:kms';
      if (this.config.cloud_objstore_kms_key) input.SSEKMSKeyId = this.config.cloud_objstore_kms_key;
    } else if (this.config.cloud_objstore_server_side_encryption) {
      input.ServerSideEncryption = 'AES256';
    }
    await withTimeout('cloud-objstore upload', writeTimeoutMs(file.size), (abortSignal) => this.client.send(new PutObjectCommand(input), { abortSignal }));
  }

  protected async *listObjects(prefix: string): AsyncIterable<string> {
    for await (const page of paginateListObjectsV2({ client: this.client }, { Bucket: this.bucket, Prefix: prefix })) {
      for (const object of page.Contents ?? []) if (object.Key) yield object.Key;
    }
  }

  async delete(name: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(name) }));
  }

  override close(): void {
    this.client.destroy();
  }
}
