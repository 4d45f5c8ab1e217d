import type { SnapshotFile } from './archive';

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
