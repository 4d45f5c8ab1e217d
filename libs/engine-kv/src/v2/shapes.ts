/** The stored shapes of a version 2 mount's records (records.ts reads and writes them). */

export interface VersionState {
  created_time: string;
  /** '' while live; may lie in the future when `delete_version_after` applies. */
  deletion_time: string;
  destroyed: boolean;
}

export interface KeyMetadata {
  /** Keyed by version number. */
  versions: Record<string, VersionState>;
  current_version: number;
  /** 0 until versions have been pruned, as in Vault. */
  oldest_version: number;
  max_versions: number;
  cas_required: boolean;
  /** Seconds; 0 means the mount's setting applies. */
  delete_version_after: number;
  custom_metadata: Record<string, string> | null;
  created_time: string;
  updated_time: string;
}

export interface EngineConfig {
  max_versions: number;
  cas_required: boolean;
  delete_version_after: number;
}
