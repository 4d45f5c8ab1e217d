import { DefaultAzureCredential } from '@azure/identity';
import { BlobServiceClient, StorageSharedKeyCredential, type ContainerClient } from '@azure/storage-blob';
import type { SnapshotFile } from '../archive';
import { CLOUDB_ENVIRONMENTS, type SnapshotConfig } from '../config';
import { ObjectTarget, withScheme } from './object-target';

/**
 * A Blob Storage container (`cloudb-blob`) through @azure/storage-blob. The account key signs
 * requests (Shared Key); without one the SDK's credential chain (environment, workload or managed
 * identity, CLI) does. The service is `cloudb_endpoint` when given, else the account's host in
 * `cloudb_blob_environment`'s cloud.
 */
export class BlobTarget extends ObjectTarget {
  private readonly container: ContainerClient;

  constructor(config: SnapshotConfig) {
    super(config);
    const account = config.cloudb_account_name;
    const endpoint = config.cloudb_endpoint ? withScheme(config.cloudb_endpoint) : `https://${account}.${CLOUDB_ENVIRONMENTS[config.cloudb_blob_environment ?? 'AzurePublicCloud']}`;
    const credential = config.cloudb_account_key ? new StorageSharedKeyCredential(account!, config.cloudb_account_key) : new DefaultAzureCredential();
    this.container = new BlobServiceClient(endpoint, credential).getContainerClient(config.cloudb_container_name!);
  }

  url(name: string): string {
    return this.container.getBlobClient(this.key(name)).url;
  }

  async write(name: string, file: SnapshotFile): Promise<void> {
    await this.container.getBlockBlobClient(this.key(name)).uploadFile(file.path, { blobHTTPHeaders: { blobContentType: 'application/gzip' } });
  }

  protected async *listObjects(prefix: string): AsyncIterable<string> {
    for await (const blob of this.container.listBlobsFlat({ prefix })) yield blob.name;
  }

  async delete(name: string): Promise<void> {
    await this.container.deleteBlob(this.key(name));
  }
}
