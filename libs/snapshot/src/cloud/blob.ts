import { AzureAuthorityHosts, DefaultAzureCredential } from '@azure/identity';
import { BlobServiceClient, StorageSharedKeyCredential, type ContainerClient } from '@azure/storage-blob';
import type { SnapshotFile } from '../archive';
import { CLOUDB_ENVIRONMENTS, type SnapshotConfig } from '../config';
import { ObjectTarget, withScheme } from './object-target';

/** Azure's own sign-in hosts, which the SDK's instance discovery validates. */
const AZURE_AUTHORITY_HOSTS: readonly string[] = Object.values(AzureAuthorityHosts);

/**
 * The SDK's credential chain. Instance discovery asks Azure's public cloud whether the sign-in
 * host is one of its own: an AZURE_AUTHORITY_HOST outside Azure's (a private cloud's or Azure
 * Stack's directory, which the operator chose) cannot pass it, so it is skipped for such a host.
 */
function credentialChain(): DefaultAzureCredential {
  const authorityHost = process.env.AZURE_AUTHORITY_HOST?.replace(/\/+$/, '');
  return new DefaultAzureCredential({ disableInstanceDiscovery: !!authorityHost && !AZURE_AUTHORITY_HOSTS.includes(authorityHost) });
}

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
    const credential = config.cloudb_account_key ? new StorageSharedKeyCredential(account!, config.cloudb_account_key) : credentialChain();
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
