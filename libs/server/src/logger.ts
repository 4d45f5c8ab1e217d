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
  /** Writes out what is buffered (after a line others wait for, like "gateway started"). */
  flush(): void;
}

/** How long a log line may wait in the buffer. */
const FLUSH_INTERVAL_MS = 200;
/** Bytes gathered before a write: one write per few dozen request lines instead of one each. */
const BUFFER_BYTES = 8 * 1024;

/**
 * JSON lines on stdout, tagged with the service. Lines are buffered and written in batches (at
 * most FLUSH_INTERVAL_MS late, and synchronously at exit): a write per request line cost about as
 * much as the rest of a simple request.
 */
export function createLoggers(config: Pick<ServerConfig, 'logLevel'>, service: string): Loggers {
  // One destination for both, so their lines never interleave mid-line.
  const destination = pino.destination({ dest: 1, sync: false, minLength: BUFFER_BYTES });
  const flush = () => destination.flush();
  setInterval(flush, FLUSH_INTERVAL_MS).unref();
  process.once('exit', () => destination.flushSync());
  const options = { level: config.logLevel, base: { service, pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime };
  return {
    logger: pino(
      { ...options, redact: { paths: ['*.token', '*.password', '*.key', 'headers.authorization', 'headers["x-service-token"]'], censor: '[redacted]' } },
      destination,
    ),
    requestLogger: pino(options, destination),
    flush,
  };
}
