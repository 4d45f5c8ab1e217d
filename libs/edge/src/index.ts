export { RequestPipeline, type RequestLine } from './pipeline';
export type { HttpRequest, HttpResult } from './exchange';
export { UiAssets, DEFAULT_UI_DIRECTORY, UI_CONTENT_SECURITY_POLICY } from './ui-assets';
export { startHttpFrontend, type HttpFrontend } from './frontend';
export { serviceHealthHandler, type HttpHandler, type ServiceState } from './service-health';
