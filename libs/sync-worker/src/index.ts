export { SyncWorker, retryDelayMs, type SyncWorkerOptions } from './worker';
export type { ProviderEndpoints } from './providers';
