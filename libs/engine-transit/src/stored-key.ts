import { ServiceError } from '@svc/api-contract';
import type { StoredVersion } from './key-material';
import { HMAC_KEY_SIZE, keyTypeSpec, type KeyTypeSpec } from './key-types';

/** A named key with all its versions, as stored at `policy/<name>`. */
export interface StoredKey {
  name: string;
  type: string;
  derived: boolean;
  convergent_encryption: boolean;
  exportable: boolean;
  allow_plaintext_backup: boolean;
  deletion_allowed: boolean;
  min_decryption_version: number;
  min_encryption_version: number;
  min_available_version: number;
  latest_version: number;
  /** Seconds; 0 disables automatic rotation. */
  auto_rotate_period: number;
  /** HMAC keys: size in bytes; 0 for other types. */
  key_size: number;
  imported: boolean;
  allow_rotation: boolean;
  /** Set by the first rotation inside the service: an imported key then takes no more imports. */
  rotated_in_service: boolean;
  versions: Record<string, StoredVersion>;
  /** Bumped on every write, so replicas can tell a cached copy is stale. */
  revision: number;
}

/** Options fixed at creation (create body, import body, encrypt upsert). */
export interface KeyOptions {
  type: string;
  derived: boolean;
  convergent_encryption: boolean;
  exportable: boolean;
  allow_plaintext_backup: boolean;
  auto_rotate_period: number;
  key_size: number;
  imported: boolean;
  allow_rotation: boolean;
}

const ONE_HOUR = 3600;

export function checkAutoRotatePeriod(seconds: number): void {
  if (seconds !== 0 && seconds < ONE_HOUR) {
    throw ServiceError.badRequest('auto_rotate_period must be 0 to disable automatic rotation, or at least one hour');
  }
}

/** Checks creation options against the key type; returns the type's description. */
export function checkKeyOptions(options: KeyOptions): KeyTypeSpec {
  const spec = keyTypeSpec(options.type);
  if (options.derived && !spec.supportsDerivation) {
    throw ServiceError.badRequest(`key derivation is not supported for key type ${spec.name}`);
  }
  if (options.convergent_encryption) {
    if (!options.derived) throw ServiceError.badRequest('convergent encryption requires derivation to be enabled (derived)');
    if (spec.family !== 'aead') throw ServiceError.badRequest(`convergent encryption is not supported for key type ${spec.name}`);
  }
  if (options.key_size !== 0) {
    if (spec.family !== 'hmac') throw ServiceError.badRequest('key_size is only valid for hmac keys');
    if (options.key_size < HMAC_KEY_SIZE.min || options.key_size > HMAC_KEY_SIZE.max) {
      throw ServiceError.badRequest(`key_size must be between ${HMAC_KEY_SIZE.min} and ${HMAC_KEY_SIZE.max} bytes`);
    }
  }
  checkAutoRotatePeriod(options.auto_rotate_period);
  return spec;
}

/** The HMAC key size to generate for these options (bytes). */
export function hmacKeySize(options: Pick<KeyOptions, 'key_size'>): number {
  return options.key_size || HMAC_KEY_SIZE.default;
}

export function newStoredKey(name: string, options: KeyOptions, first: StoredVersion): StoredKey {
  const spec = checkKeyOptions(options);
  return {
    name,
    type: spec.name,
    derived: options.derived,
    convergent_encryption: options.convergent_encryption,
    exportable: options.exportable,
    allow_plaintext_backup: options.allow_plaintext_backup,
    deletion_allowed: false,
    min_decryption_version: 1,
    min_encryption_version: 0,
    min_available_version: 0,
    latest_version: 1,
    auto_rotate_period: options.auto_rotate_period,
    key_size: spec.family === 'hmac' ? hmacKeySize(options) : 0,
    imported: options.imported,
    allow_rotation: options.allow_rotation,
    rotated_in_service: false,
    versions: { '1': first },
    revision: 1,
  };
}

/** Refuses rotation of keys that may not be rotated inside the service. */
export function checkRotatable(stored: StoredKey): void {
  if (stored.imported && !stored.allow_rotation) {
    throw ServiceError.badRequest(`imported key "${stored.name}" does not allow rotation (allow_rotation was not set)`);
  }
}

export function withRotation(stored: StoredKey, version: StoredVersion): StoredKey {
  checkRotatable(stored);
  const latest = stored.latest_version + 1;
  return {
    ...stored,
    latest_version: latest,
    rotated_in_service: true,
    versions: { ...stored.versions, [String(latest)]: version },
  };
}

/** Whether automatic rotation is due at `now` (unix ms). */
export function rotationDue(stored: StoredKey, now: number): boolean {
  if (stored.auto_rotate_period <= 0 || (stored.imported && !stored.allow_rotation)) return false;
  const latest = stored.versions[String(stored.latest_version)];
  return latest !== undefined && now - latest.creation_time >= stored.auto_rotate_period * 1000;
}

/** Changes of POST keys/:name/config; absent fields stay as they are. */
export interface KeyConfigChanges {
  min_decryption_version?: number;
  min_encryption_version?: number;
  deletion_allowed?: boolean;
  exportable?: boolean;
  allow_plaintext_backup?: boolean;
  auto_rotate_period?: number;
}

export function withConfig(stored: StoredKey, changes: KeyConfigChanges): StoredKey {
  const next = { ...stored };
  if (changes.min_decryption_version !== undefined) {
    if (changes.min_decryption_version < 0) throw ServiceError.badRequest('min_decryption_version cannot be negative');
    // Versions start at 1, so 0 means "every version".
    const version = Math.max(changes.min_decryption_version, 1);
    if (version > stored.latest_version) {
      throw ServiceError.badRequest(
        `cannot set min_decryption_version to ${version}: the latest key version is ${stored.latest_version}`,
      );
    }
    if (version < stored.min_available_version) {
      throw ServiceError.badRequest('cannot set min_decryption_version below the minimum available (trimmed) version');
    }
    next.min_decryption_version = version;
  }
  if (changes.min_encryption_version !== undefined) {
    if (changes.min_encryption_version < 0) throw ServiceError.badRequest('min_encryption_version cannot be negative');
    if (changes.min_encryption_version > stored.latest_version) {
      throw ServiceError.badRequest(
        `cannot set min_encryption_version to ${changes.min_encryption_version}: the latest key version is ${stored.latest_version}`,
      );
    }
    next.min_encryption_version = changes.min_encryption_version;
  }
  if (next.min_encryption_version > 0 && next.min_encryption_version < next.min_decryption_version) {
    throw ServiceError.badRequest('min_encryption_version must be 0 or at least min_decryption_version');
  }
  if (changes.deletion_allowed !== undefined) next.deletion_allowed = changes.deletion_allowed;
  if (changes.exportable !== undefined) {
    if (stored.exportable && !changes.exportable) throw ServiceError.badRequest('exportable cannot be disabled once set');
    next.exportable = changes.exportable;
  }
  if (changes.allow_plaintext_backup !== undefined) {
    if (stored.allow_plaintext_backup && !changes.allow_plaintext_backup) {
      throw ServiceError.badRequest('allow_plaintext_backup cannot be disabled once set');
    }
    next.allow_plaintext_backup = changes.allow_plaintext_backup;
  }
  if (changes.auto_rotate_period !== undefined) {
    checkAutoRotatePeriod(changes.auto_rotate_period);
    next.auto_rotate_period = changes.auto_rotate_period;
  }
  return next;
}

/** Permanently drops versions below `minAvailable` (keys/:name/trim). */
export function withTrim(stored: StoredKey, minAvailable: number): StoredKey {
  if (minAvailable <= 0) throw ServiceError.badRequest('min_available_version must be positive');
  if (minAvailable < stored.min_available_version) {
    throw ServiceError.badRequest('min_available_version cannot be decremented');
  }
  if (stored.min_encryption_version === 0) {
    throw ServiceError.badRequest('min_available_version cannot be set while min_encryption_version is 0 (latest)');
  }
  if (minAvailable > stored.min_encryption_version) {
    throw ServiceError.badRequest('min_available_version cannot be greater than min_encryption_version');
  }
  if (minAvailable > stored.min_decryption_version) {
    throw ServiceError.badRequest('min_available_version cannot be greater than min_decryption_version');
  }
  const versions = Object.fromEntries(
    Object.entries(stored.versions).filter(([version]) => Number(version) >= minAvailable),
  );
  return { ...stored, min_available_version: minAvailable, versions };
}
