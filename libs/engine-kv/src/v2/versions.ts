import { formatDuration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { EngineConfig, KeyMetadata, VersionState } from './shapes';

/** Versions kept per key when neither the key nor the mount sets `max_versions` (Vault's default). */
export const DEFAULT_MAX_VERSIONS = 10;

export function emptyMetadata(now: Date): KeyMetadata {
  const time = now.toISOString();
  return {
    versions: {},
    current_version: 0,
    oldest_version: 0,
    max_versions: 0,
    cas_required: false,
    delete_version_after: 0,
    custom_metadata: null,
    created_time: time,
    updated_time: time,
  };
}

/** Deleted means soft-deleted now: a `deletion_time` set by `delete_version_after` may still lie ahead. */
export function isDeleted(state: VersionState, now: Date): boolean {
  return state.deletion_time !== '' && Date.parse(state.deletion_time) <= now.getTime();
}

export function isLive(state: VersionState, now: Date): boolean {
  return !state.destroyed && !isDeleted(state, now);
}

/** A version as data reads and writes describe it. */
export function versionMetadata(metadata: KeyMetadata, version: number): Record<string, unknown> {
  const state = metadata.versions[version];
  return {
    created_time: state.created_time,
    custom_metadata: metadata.custom_metadata,
    deletion_time: state.deletion_time,
    destroyed: state.destroyed,
    version,
  };
}

/** A key's metadata as metadata reads describe it. */
export function describeMetadata(metadata: KeyMetadata): Record<string, unknown> {
  return { ...metadata, delete_version_after: formatDuration(metadata.delete_version_after) };
}

export function describeConfig(config: EngineConfig): Record<string, unknown> {
  return { ...config, delete_version_after: formatDuration(config.delete_version_after) };
}

/** The stricter of the key's and the mount's `delete_version_after`; 0 when neither sets one. */
function deleteVersionAfter(metadata: KeyMetadata, config: EngineConfig): number {
  const set = [metadata.delete_version_after, config.delete_version_after].filter((seconds) => seconds > 0);
  return set.length === 0 ? 0 : Math.min(...set);
}

/**
 * Enforces check-and-set before a new version: `cas` must equal the current version (0 for a key
 * with no versions), and must be given when the key or the mount requires it.
 */
export function checkAndSet(metadata: KeyMetadata | null, config: EngineConfig, cas: number | undefined): void {
  if (cas === undefined) {
    if (config.cas_required || metadata?.cas_required) {
      throw ServiceError.badRequest('check-and-set parameter required for this call');
    }
    return;
  }
  if (cas !== (metadata?.current_version ?? 0)) {
    throw ServiceError.badRequest('check-and-set parameter did not match the current version');
  }
}

/** Drops the oldest versions beyond the key's (or the mount's) `max_versions`; returns the dropped numbers. */
export function pruneVersions(metadata: KeyMetadata, config: EngineConfig): number[] {
  const keep = metadata.max_versions || config.max_versions || DEFAULT_MAX_VERSIONS;
  const oldestKept = metadata.current_version - keep + 1;
  if (oldestKept <= Math.max(metadata.oldest_version, 1)) return [];
  const dropped = Object.keys(metadata.versions)
    .map(Number)
    .filter((version) => version < oldestKept);
  for (const version of dropped) delete metadata.versions[version];
  metadata.oldest_version = oldestKept;
  return dropped;
}

/** Records a new current version in `metadata`; returns its number. */
export function addVersion(metadata: KeyMetadata, config: EngineConfig, now: Date): number {
  const version = metadata.current_version + 1;
  const lifetime = deleteVersionAfter(metadata, config);
  metadata.versions[version] = {
    created_time: now.toISOString(),
    deletion_time: lifetime > 0 ? new Date(now.getTime() + lifetime * 1000).toISOString() : '',
    destroyed: false,
  };
  metadata.current_version = version;
  metadata.updated_time = now.toISOString();
  return version;
}
