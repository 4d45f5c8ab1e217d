import type { SnapshotFile } from '../archive';
import type { SnapshotConfig } from '../config';
import type { SnapshotTarget } from '../targets';

/**
 * A bucket or container of a cloud provider: a snapshot is the object `<path_prefix><name>`, and
 * the configuration's snapshots are the objects listed under `<path_prefix><file_prefix>` (every
 * page of the listing).
 */
export abstract class ObjectTarget implements SnapshotTarget {
  /** `path_prefix` as a directory of the bucket: no leading '/', a trailing one. */
  private readonly prefix: string;

  constructor(protected readonly config: SnapshotConfig) {
    const prefix = config.path_prefix.replace(/^\/+/, '');
    this.prefix = prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
  }

  abstract url(name: string): string;
  abstract write(name: string, file: SnapshotFile): Promise<void>;
  abstract delete(name: string): Promise<void>;
  /** The names of the objects whose names start with `prefix`. */
  protected abstract listObjects(prefix: string): AsyncIterable<string>;

  async list(): Promise<string[]> {
    const names: string[] = [];
    for await (const key of this.listObjects(this.key(this.config.file_prefix))) names.push(key.slice(this.prefix.length));
    return names;
  }

  close(): void {}

  protected key(name: string): string {
    return this.prefix + name;
  }
}

/** An endpoint given without a scheme gets one: http when TLS is disabled. */
export function withScheme(endpoint: string, disableTls?: boolean): string {
  if (/^https?:\/\//.test(endpoint)) return disableTls ? endpoint.replace(/^https:/, 'http:') : endpoint;
  return `${disableTls ? 'http' : 'https'}://${endpoint}`;
}
