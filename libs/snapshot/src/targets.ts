import { createReadStream } from 'node:fs';
import { copyFile, mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DeleteObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, type PutObjectCommandInput } from '@aws-sdk/client-s3';
import type { SnapshotFile } from './archive';
import type { SnapshotConfig } from './config';

/** Where one configuration's snapshots go: written whole or not at all, listed by name, deleted. */
export interface SnapshotTarget {
  /** The URL a snapshot of this name has there (`file://`, `s3://`, ...), for the status. */
  url(name: string): string;
  write(name: string, file: SnapshotFile): Promise<void>;
  /** Names of the snapshots (files or objects) of this configuration, any order. */
  list(): Promise<string[]>;
  delete(name: string): Promise<void>;
  close(): void;
}

/** The snapshot files' names: `<file_prefix>-<unix nanoseconds>.snap`. */
export function snapshotName(config: SnapshotConfig, at: Date): string {
  return `${config.file_prefix}-${BigInt(at.getTime()) * 1_000_000n}.snap`;
}

/** The names in `names` that are snapshots of `config`, newest first. */
export function snapshotsNewestFirst(config: SnapshotConfig, names: readonly string[]): string[] {
  const pattern = new RegExp(`^${escapeRegExp(config.file_prefix)}-(\\d+)\\.snap$`);
  return names
    .map((name) => ({ name, at: pattern.exec(name)?.[1] }))
    .filter((entry): entry is { name: string; at: string } => entry.at !== undefined)
    .sort((a, b) => (BigInt(b.at) > BigInt(a.at) ? 1 : BigInt(b.at) < BigInt(a.at) ? -1 : 0))
    .map((entry) => entry.name);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function createTarget(config: SnapshotConfig): SnapshotTarget {
  switch (config.storage_type) {
    case 'local':
      return new LocalTarget(config);
    case 'cloud-objstore':
      return new ObjectStoreTarget(config);
    default:
      throw new Error(`storage_type ${config.storage_type} is not supported by this build`);
  }
}

/**
 * A directory on the snapshot service's host. A snapshot is copied to a temporary name, synced,
 * then renamed, so a reader never sees a partial file; `local_max_space` counts every file whose
 * name starts with `file_prefix` in the directory, and a snapshot that would not fit is not written.
 */
class LocalTarget implements SnapshotTarget {
  private readonly directory: string;

  constructor(private readonly config: SnapshotConfig) {
    this.directory = resolve(config.path_prefix);
  }

  url(name: string): string {
    return `file://${join(this.directory, name)}`;
  }

  async write(name: string, file: SnapshotFile): Promise<void> {
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    await this.removeInterruptedCopies();
    const used = await this.usedSpace();
    const allowed = this.config.local_max_space!;
    if (used + file.size > allowed) {
      throw new Error(`insufficient space: the snapshot takes ${file.size} bytes, files with prefix "${this.config.file_prefix}" already take ${used} of local_max_space ${allowed}`);
    }
    const partial = join(this.directory, `.${name}.partial`);
    try {
      await copyFile(file.path, partial);
      const handle = await open(partial, 'r+');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(partial, join(this.directory, name));
      await syncDirectory(this.directory);
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
  }

  async list(): Promise<string[]> {
    try {
      return await readdir(this.directory);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  }

  async delete(name: string): Promise<void> {
    await rm(join(this.directory, name), { force: true });
  }

  close(): void {}

  /**
   * A replica killed while copying leaves its partial file behind. The caller holds the
   * configuration's lock, so no other copy of this configuration is under way: what is left is stale.
   */
  private async removeInterruptedCopies(): Promise<void> {
    const partial = new RegExp(`^\\.${escapeRegExp(this.config.file_prefix)}-\\d+\\.snap\\.partial$`);
    for (const name of await this.list()) if (partial.test(name)) await rm(join(this.directory, name), { force: true });
  }

  private async usedSpace(): Promise<number> {
    let used = 0;
    for (const name of await this.list()) {
      if (name.startsWith(this.config.file_prefix)) used += (await stat(join(this.directory, name))).size;
    }
    return used;
  }
}

/** A rename is durable once the directory itself is synced. */
async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * An S3 bucket (`cloud-objstore`) through @aws-sdk/client-s3. Credentials are the configuration's,
 * or the SDK's own chain (environment, profile, instance role) when it has none.
 */
class ObjectStoreTarget implements SnapshotTarget {
  private readonly client: S3Client;
  private readonly bucket: string;

  constructor(private readonly config: SnapshotConfig) {
    this.bucket = config.cloud_objstore_bucket!;
    this.client = new S3Client({
      region: config.cloud_objstore_region,
      endpoint: config.cloud_objstore_endpoint && withScheme(config.cloud_objstore_endpoint, config.cloud_objstore_disable_tls),
      forcePathStyle: config.cloud_objstore_force_path_style,
      credentials: config.cloud_access_key_id
        ? { accessKeyId: config.cloud_access_key_id, secretAccessKey: config.cloud_secret_access_key!, sessionToken: config.cloud_session_token }
        : undefined,
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
    await this.client.send(new PutObjectCommand(input));
  }

  async list(): Promise<string[]> {
    const names: string[] = [];
    const prefix = this.key(this.config.file_prefix);
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const object of page.Contents ?? []) if (object.Key) names.push(object.Key.slice(this.prefix().length));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return names;
  }

  async delete(name: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(name) }));
  }

  close(): void {
    this.client.destroy();
  }

  /** `path_prefix` is a directory of the bucket, its trailing '/' optional. */
  private prefix(): string {
    const prefix = this.config.path_prefix.replace(/^\/+/, '');
    return prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
  }

  private key(name: string): string {
    return this.prefix() + name;
  }
}

/** An endpoint given without a scheme gets one: http when TLS is disabled. */
function withScheme(endpoint: string, disableTls?: boolean): string {
  if (/^https?:\/\//.test(endpoint)) return disableTls ? endpoint.replace(/^https:/, 'http:') : endpoint;
  return `${disableTls ? 'http' : 'https'}://${endpoint}`;
}
