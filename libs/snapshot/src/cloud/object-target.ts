import { withinDeadline } from '@svc/api-contract';
import type { SnapshotFile } from '../archive';
import type { SnapshotConfig } from '../config';
import type { SnapshotTarget } from '../target';

/**
 * A call to a target's provider with no answer this long fails, so a silent provider turns into a
 * failed run (recorded in the status; the next interval tries again) and never holds the
 * configuration's lock. A write is given longer: as long again per MiB of snapshot.
 */
export const TARGET_CALL_TIMEOUT_MS = 10_000;

/** How long a write of `bytes` may take in all. */
export function writeTimeoutMs(bytes: number): number {
  // Whole milliseconds: AbortSignal.timeout refuses a fraction.
  return Math.ceil(TARGET_CALL_TIMEOUT_MS * (1 + bytes / (1024 * 1024)));
}

/** Runs a call that stops at `signal`; when the time is up, the error says which call ran out of time, and how long it had. */
export function withTimeout<T>(what: string, ms: number, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  return withinDeadline(ms, call, (cause) => new Error(`${what}: no answer within ${Math.round(ms / 1000)} s`, { cause }));
}

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
