import pino, { type Logger } from 'pino';
import type { ServerConfig } from '@svc/config';

/** JSON lines on stdout, one logger per process, tagged with the service it runs. */
export function createLogger(config: Pick<ServerConfig, 'logLevel'>, service: string): Logger {
  return pino({
    level: config.logLevel,
    base: { service, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Belt and braces: fields that could carry a credential are never written.
    redact: { paths: ['*.token', '*.password', '*.key', 'headers.authorization', 'headers["x-service-token"]'], censor: '[redacted]' },
  });
}
