import { copyFile, mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { SnapshotFile } from './archive';
import type { SnapshotConfig } from './config';
import type { SnapshotTarget } from './target';

export type { SnapshotTarget };

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

/**
 * The target of a configuration. Each provider's SDK is loaded when a configuration first uses
 * it: the gateways, which share this library for the configurations, never load them.
 */
export async function createTarget(config: SnapshotConfig): Promise<SnapshotTarget> {
  switch (config.storage_type) {
    case 'local':
      return new LocalTarget(config);
    case 'cloud-objstore':
      return new (await import('./cloud/s3')).S3Target(config);
    case 'cloudb-blob':
      return new (await import('./cloud/blob')).BlobTarget(config);
    case 'cloudc-bucket':
      return new (await import('./cloud/bucket')).BucketTarget(config);
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
