import { ServiceError } from '@svc/api-contract';

/**
 * Automated snapshot configurations (Document 1, "Automated snapshots"): what the gateway's
 * `sys/storage/raft/snapshot-auto/config/:name` validates and stores, and what the snapshot
 * service reads back to run them. Both live in the barrier, under the core's storage.
 */
export const STORAGE_TYPES = ['local', 'cloud-objstore', 'cloudb-blob', 'cloudc-bucket'] as const;
export type SnapshotStorageType = (typeof STORAGE_TYPES)[number];

export const CONFIG_PREFIX = 'core/snapshot-auto/config/';
export const STATUS_PREFIX = 'core/snapshot-auto/status/';
export const DEFAULT_FILE_PREFIX = 'service-snapshot';

/** Environments of the Blob service and the host suffix of each (the SDK's names). */
export const CLOUDB_ENVIRONMENTS: Readonly<Record<string, string>> = {
  AzurePublicCloud: 'blob.core.windows.net',
  AzureChinaCloud: 'blob.core.chinacloudapi.cn',
  AzureUSGovernmentCloud: 'blob.core.usgovcloudapi.net',
  AzureGermanCloud: 'blob.core.cloudapi.de',
};

export interface SnapshotConfig {
  interval: number;
  retain: number;
  path_prefix: string;
  file_prefix: string;
  storage_type: SnapshotStorageType;
  local_max_space?: number;
  cloud_objstore_bucket?: string;
  cloud_objstore_region?: string;
  cloud_access_key_id?: string;
  cloud_secret_access_key?: string;
  cloud_session_token?: string;
  cloud_objstore_endpoint?: string;
  cloud_objstore_disable_tls?: boolean;
  cloud_objstore_force_path_style?: boolean;
  cloud_objstore_enable_kms?: boolean;
  cloud_objstore_server_side_encryption?: boolean;
  cloud_objstore_kms_key?: string;
  cloudc_bucket?: string;
  cloudc_service_account_key?: string;
  cloudc_endpoint?: string;
  cloudc_disable_tls?: boolean;
  cloudb_container_name?: string;
  cloudb_account_name?: string;
  cloudb_account_key?: string;
  cloudb_blob_environment?: string;
  cloudb_endpoint?: string;
}

export type TypeField = Exclude<keyof SnapshotConfig, 'interval' | 'retain' | 'path_prefix' | 'file_prefix' | 'storage_type'>;

/** The fields of each storage type; a field of another type is refused. */
export const TYPE_FIELDS: Readonly<Record<SnapshotStorageType, readonly TypeField[]>> = {
  local: ['local_max_space'],
  'cloud-objstore': [
    'cloud_objstore_bucket',
    'cloud_objstore_region',
    'cloud_access_key_id',
    'cloud_secret_access_key',
    'cloud_session_token',
    'cloud_objstore_endpoint',
    'cloud_objstore_disable_tls',
    'cloud_objstore_force_path_style',
    'cloud_objstore_enable_kms',
    'cloud_objstore_server_side_encryption',
    'cloud_objstore_kms_key',
  ],
  'cloudc-bucket': ['cloudc_bucket', 'cloudc_service_account_key', 'cloudc_endpoint', 'cloudc_disable_tls'],
  'cloudb-blob': ['cloudb_container_name', 'cloudb_account_name', 'cloudb_account_key', 'cloudb_blob_environment', 'cloudb_endpoint'],
};

/** Credentials: stored, used, never read back. */
export const CREDENTIAL_FIELDS: readonly TypeField[] = ['cloud_secret_access_key', 'cloud_session_token', 'cloudb_account_key', 'cloudc_service_account_key'];

/** The fields of a service-account key the cloudc target signs with. */
export interface ServiceAccountKey {
  client_email: string;
  private_key: string;
  private_key_id?: string;
  project_id?: string;
}

const invalid = (message: string) => ServiceError.badRequest(message);

/**
 * Checks a whole configuration (the stored one with the request's fields over it) and returns it
 * with the defaults filled in; every refusal is a 400 naming the field.
 */
export function checkConfig(input: Partial<SnapshotConfig>): SnapshotConfig {
  const type = input.storage_type;
  if (!type) throw invalid('missing required field "storage_type"');
  if (!STORAGE_TYPES.includes(type)) throw invalid(`storage_type "${type}" is not one of ${STORAGE_TYPES.join(', ')}`);
  if (input.interval === undefined) throw invalid('missing required field "interval"');
  if (!(input.interval > 0)) throw invalid('interval must be greater than zero');
  const retain = input.retain ?? 1;
  if (!Number.isInteger(retain) || retain < 1) throw invalid('retain must be an integer of at least 1');
  const pathPrefix = input.path_prefix ?? '';
  if (pathPrefix === '') throw invalid('missing required field "path_prefix"');
  if ((type === 'cloudb-blob' || type === 'cloudc-bucket') && !pathPrefix.endsWith('/')) {
    throw invalid(`path_prefix must end in "/" for storage_type ${type}`);
  }
  const filePrefix = input.file_prefix ?? DEFAULT_FILE_PREFIX;
  if (filePrefix === '' || filePrefix.includes('/')) throw invalid('file_prefix must be a non-empty name without "/"');
  for (const [other, fields] of Object.entries(TYPE_FIELDS)) {
    if (other === type) continue;
    for (const field of fields) if (input[field] !== undefined) throw invalid(`field "${field}" does not apply to storage_type ${type}`);
  }
  const config: SnapshotConfig = { ...input, interval: input.interval, retain, path_prefix: pathPrefix, file_prefix: filePrefix, storage_type: type };
  checkTypeFields(config);
  return config;
}

function required(config: SnapshotConfig, field: TypeField): void {
  const value = config[field];
  if (value === undefined || value === '') throw invalid(`missing required field "${field}" for storage_type ${config.storage_type}`);
}

function checkTypeFields(config: SnapshotConfig): void {
  switch (config.storage_type) {
    case 'local':
      required(config, 'local_max_space');
      if (!Number.isInteger(config.local_max_space) || config.local_max_space! <= 0) throw invalid('local_max_space must be a positive number of bytes');
      return;
    case 'cloud-objstore':
      required(config, 'cloud_objstore_bucket');
      required(config, 'cloud_objstore_region');
      if (config.cloud_objstore_enable_kms && config.cloud_objstore_server_side_encryption) {
        throw invalid('cloud_objstore_server_side_encryption cannot be combined with cloud_objstore_enable_kms');
      }
      if (config.cloud_objstore_kms_key && !config.cloud_objstore_enable_kms) throw invalid('cloud_objstore_kms_key needs cloud_objstore_enable_kms');
      if (Boolean(config.cloud_access_key_id) !== Boolean(config.cloud_secret_access_key)) {
        throw invalid('cloud_access_key_id and cloud_secret_access_key are given together or not at all');
      }
      if (config.cloud_objstore_endpoint !== undefined) checkUrl('cloud_objstore_endpoint', config.cloud_objstore_endpoint);
      return;
    case 'cloudc-bucket':
      required(config, 'cloudc_bucket');
      if (config.cloudc_service_account_key !== undefined) parseServiceAccountKey(config.cloudc_service_account_key);
      if (config.cloudc_endpoint !== undefined) checkUrl('cloudc_endpoint', config.cloudc_endpoint);
      return;
    case 'cloudb-blob':
      required(config, 'cloudb_container_name');
      if (config.cloudb_account_key && !config.cloudb_account_name) throw invalid('cloudb_account_key needs cloudb_account_name');
      if (!config.cloudb_account_name && !config.cloudb_endpoint) throw invalid('missing required field "cloudb_account_name" (or cloudb_endpoint) for storage_type cloudb-blob');
      if (config.cloudb_blob_environment !== undefined && !(config.cloudb_blob_environment in CLOUDB_ENVIRONMENTS)) {
        throw invalid(`cloudb_blob_environment must be one of ${Object.keys(CLOUDB_ENVIRONMENTS).join(', ')}`);
      }
      if (config.cloudb_endpoint !== undefined) checkUrl('cloudb_endpoint', config.cloudb_endpoint);
      return;
  }
}

/** An http(s) URL, or a host[:port] the scheme is added to (http with the type's disable_tls). */
function checkUrl(field: string, value: string): void {
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `https://${value}`;
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) throw invalid(`${field} must be an http or https URL, or a host[:port]`);
}

/** The service-account key JSON; a 400 naming the field (never quoting the key) when malformed. */
export function parseServiceAccountKey(text: string): ServiceAccountKey {
  let key: Partial<ServiceAccountKey>;
  try {
    key = JSON.parse(text) as Partial<ServiceAccountKey>;
  } catch {
    throw invalid('cloudc_service_account_key is not valid JSON');
  }
  if (typeof key?.client_email !== 'string' || typeof key.private_key !== 'string') {
    throw invalid('cloudc_service_account_key must be a service-account key with client_email and private_key');
  }
  return key as ServiceAccountKey;
}

/** What a read answers: every field but the credentials. */
export function publicConfig(config: SnapshotConfig): Record<string, unknown> {
  const shown: Record<string, unknown> = { ...config };
  for (const field of CREDENTIAL_FIELDS) delete shown[field];
  return shown;
}

/** The status of one configuration (Document 1, "Automated snapshot status"). */
export interface SnapshotStatus {
  /** The attempt in progress, or the latest one. */
  snapshot_start: string;
  snapshot_url: string;
  /** The latest attempt that finished; the error is empty when it succeeded. */
  last_snapshot_start: string;
  last_snapshot_end: string;
  last_snapshot_error: string;
  last_snapshot_url: string;
}

/** Timestamps of a configuration that has not run yet: the zero time, as Vault shows it. */
export const ZERO_TIME = '0001-01-01T00:00:00Z';

export const NO_STATUS: SnapshotStatus = {
  snapshot_start: ZERO_TIME,
  snapshot_url: '',
  last_snapshot_start: ZERO_TIME,
  last_snapshot_end: ZERO_TIME,
  last_snapshot_error: '',
  last_snapshot_url: '',
};
