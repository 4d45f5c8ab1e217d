export { SvcClient } from './client';
export { SysClient } from './sys';
export { SvcApiError, SvcConnectionError } from './errors';
export * from './types';
export * from './areas';
