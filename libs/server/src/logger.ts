import pino, { type Logger } from 'pino';
import type { ServerConfig } from '@svc/config';

/** JSON lines on stdout (buffered, so logging stays off the request's critical path), tagged with the service. */
export function createLogger(config: Pick<ServerConfig, 'logLevel'>, service: string): Logger {
  return pino({
    level: config.logLevel,
    base: { service, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Belt and braces: fields that could carry a credential are never written.
    redact: { paths: ['*.token', '*.password', '*.key', 'headers.authorization', 'headers["x-service-token"]'], censor: '[redacted]' },
  }, pino.destination({ dest: 1, sync: false }));
}
