export { Core, type CoreOptions, type CoreState, type InitRequest } from './core';
export type { Route } from './namespaces/namespace';
export { RequestPipeline, type HttpRequest, type HttpResult, type RequestLine } from './http/pipeline';
export { startHttpFrontend, type HttpFrontend } from './http/frontend';
export { serviceHealthHandler, type RequestHandler, type ServiceState } from './http/service-health';
export { createSystemBackend } from './sys';
export { MountTable, type MountEntry } from './mounts/mount-table';
export { TokenStore, type TokenEntry } from './tokens/token-store';
export { VERSION } from './version';
