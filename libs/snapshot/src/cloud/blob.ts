import { AzureAuthorityHosts, DefaultAzureCredential } from '@azure/identity';
import { BlobServiceClient, StorageSharedKeyCredential, type ContainerClient } from '@azure/storage-blob';
import type { SnapshotFile } from '../archive';
import { CLOUDB_ENVIRONMENTS, type SnapshotConfig } from '../config';
import { ObjectTarget, TARGET_CALL_TIMEOUT_MS, withScheme, withTimeout, writeTimeoutMs } from './object-target';

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
    const blob = this.container.getBlockBlobClient(this.key(name));
    await withTimeout('cloudb-blob upload', writeTimeoutMs(file.size), (abortSignal) => blob.uploadFile(file.path, { blobHTTPHeaders: { blobContentType: 'application/gzip' }, abortSignal }));
  }

  protected async *listObjects(prefix: string): AsyncIterable<string> {
    const names = await withTimeout('cloudb-blob listing', TARGET_CALL_TIMEOUT_MS, async (abortSignal) => {
      const listed: string[] = [];
      for await (const blob of this.container.listBlobsFlat({ prefix, abortSignal })) listed.push(blob.name);
      return listed;
    });
    yield* names;
  }

  async delete(name: string): Promise<void> {
    await withTimeout('cloudb-blob delete', TARGET_CALL_TIMEOUT_MS, (abortSignal) => this.container.deleteBlob(this.key(name), { abortSignal }));
  }
}
