import { Storage, type Bucket } from '@google-cloud/storage';
import type { SnapshotFile } from '../archive';
import { parseServiceAccountKey, type SnapshotConfig } from '../config';
import { ObjectTarget, TARGET_CALL_TIMEOUT_MS, withScheme, writeTimeoutMs } from './object-target';

/**
 * A Cloud Storage bucket (`cloudc-bucket`) through @google-cloud/storage, with the configuration's
 * service-account key or else the SDK's application default credentials. A service account signs
 * its own token for each request (a self-signed JWT with the storage scopes, which Cloud Storage
 * accepts), so no token endpoint is involved: `cloudc_endpoint` is the only address used.
 */
export class BucketTarget extends ObjectTarget {
  private readonly bucket: Bucket;

  constructor(config: SnapshotConfig) {
    super(config);
    const key = config.cloudc_service_account_key ? parseServiceAccountKey(config.cloudc_service_account_key) : undefined;
    const storage = new Storage({
      credentials: key,
      projectId: key?.project_id,
      apiEndpoint: config.cloudc_endpoint && withScheme(config.cloudc_endpoint, config.cloudc_disable_tls),
      // Without it the SDK sends no credentials at all to an endpoint of its own choosing.
      useAuthWithCustomEndpoint: true,
      // Each request's deadline; retries of a listing or a delete end when the same time has passed again (seconds).
      timeout: TARGET_CALL_TIMEOUT_MS,
      retryOptions: { totalTimeout: (2 * TARGET_CALL_TIMEOUT_MS) / 1000 },
    });
    storage.authClient.useJWTAccessWithScope = true;
    this.bucket = storage.bucket(config.cloudc_bucket!);
  }

  url(name: string): string {
    return `gs://${this.bucket.name}/${this.key(name)}`;
  }

  async write(name: string, file: SnapshotFile): Promise<void> {
    // One streamed multipart request. (The SDK's resumable uploads send no credentials to a
    // cloudc_endpoint outside Google's domains, whatever useAuthWithCustomEndpoint says.)
    await this.bucket.upload(file.path, { destination: this.key(name), resumable: false, contentType: 'application/gzip', timeout: writeTimeoutMs(file.size) });
  }

  protected async *listObjects(prefix: string): AsyncIterable<string> {
    // The SDK follows the listing's pages.
    const [files] = await this.bucket.getFiles({ prefix });
    for (const file of files) yield file.name;
  }

  async delete(name: string): Promise<void> {
    await this.bucket.file(this.key(name)).delete();
  }
}
