export { startGateway, startService } from './application';
export type { RunningProcess } from './processes';
export { runAsMain } from '@svc/http';
export { runServerCommand, startServer, parseServerFlags, SERVER_USAGE, type ServerFlags, type DevCredentials } from './command';
export { ENGINE_TYPES, engineTypes, serviceNames } from './engines';
export { createLoggers, type Loggers } from './logger';
