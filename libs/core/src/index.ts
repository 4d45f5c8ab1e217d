export { composeCore, type CoreOptions } from './compose';
export type { Core } from './core-parts';
export type { CoreState, InitRequest } from './seal/seal-lifecycle';
export type { Route } from './namespaces/namespace';
export { RequestHandler, type RequestHandlerDeps } from './request/request-handler';
export { responseEnvelope, type LogicalRequest, type LogicalResult } from './request/logical';
export { MountTable, type MountEntry } from './mounts/mount-table';
export { TokenStore, type TokenEntry } from './tokens/token-store';
export { VERSION } from '@svc/api-contract';
