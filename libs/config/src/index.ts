export * from './types';
export { ConfigError } from './errors';
export { loadConfigFile, parseConfig, DEFAULT_LEASE_TTL_SECONDS } from './parse';
export type { ConfigFormat } from './parse';
export { DEFAULT_ADDRESS, DEFAULT_MAX_REQUEST_SIZE } from './listener';
export { devConfig } from './dev';
export { parseHcl } from './hcl';
