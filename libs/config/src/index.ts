export * from './types';
export { ConfigError } from './errors';
export { loadConfigFile, parseConfig, DEFAULT_LEASE_TTL_SECONDS, MAX_WORKERS } from './parse';
export type { ConfigFormat } from './parse';
export { DEFAULT_ADDRESS, DEFAULT_JSON_LIMITS, DEFAULT_MAX_REQUEST_SIZE, DEFAULT_TIMEOUTS } from './listener';
export { devConfig } from './dev';
export { parseHcl } from './hcl';
export { cloudCredentials, cloudRegion } from './cloud-environment';
export type { ReplicationConfig } from './replication';
