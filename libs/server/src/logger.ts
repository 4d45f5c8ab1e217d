import pino, { type Logger } from 'pino';
import type { ServerConfig } from '@svc/config';

export interface Loggers {
  /** General logging; fields that could carry a credential are redacted (belt and braces). */
  logger: Logger;
  /**
   * The per-request line (request id, method, path, status, duration): its fields are fixed and
   * hold no secret, so it skips redaction, which would cost about as much as the rest of the line.
   */
  requestLogger: Logger;
}

/** JSON lines on stdout (buffered, so logging stays off the request's critical path), tagged with the service. */
export function createLoggers(config: Pick<ServerConfig, 'logLevel'>, service: string): Loggers {
  // One destination for both, so their lines never interleave mid-line.
  const destination = pino.destination({ dest: 1, sync: false });
  const options = { level: config.logLevel, base: { service, pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime };
  return {
    logger: pino(
      { ...options, redact: { paths: ['*.token', '*.password', '*.key', 'headers.authorization', 'headers["x-service-token"]'], censor: '[redacted]' } },
      destination,
    ),
    requestLogger: pino(options, destination),
  };
}
