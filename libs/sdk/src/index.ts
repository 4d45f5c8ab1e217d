export { SvcClient } from './client';
export { SysClient } from './sys';
export { SvcApiError, SvcConnectionError } from './errors';
export * from './types';
export { StubApi } from './stub-api';
export type { RecordedRequest, StubReply } from './stub-api';
