import { writeSync } from 'node:fs';
import pino, { type Logger } from 'pino';
import type { ServerConfig } from '@svc/config';
import type { RequestLine } from '@svc/edge';

export interface Loggers {
  /** General logging; fields that could carry a credential are redacted (belt and braces). */
  logger: Logger;
  /** Writes the per-request line (request id, method, path, status, duration) at `info`. */
  logRequest(line: RequestLine): void;
  /** Writes out what is buffered (after a line others wait for, like "gateway started"). */
  flush(): void;
  /** Changes the level of every line from now on (SIGHUP re-reads `log_level`). */
  setLevel(level: ServerConfig['logLevel']): void;
}

/** How long a log line may wait in the buffer. */
const FLUSH_INTERVAL_MS = 200;
/** Characters gathered before a write: one write per few dozen request lines instead of one each. */
const BUFFER_CHARS = 32 * 1024;
const INFO = 30;

let lastMs = 0;
let lastIso = '';
/** The ISO time of now, formatted once per millisecond however many lines share it. */
function isoNow(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastIso = new Date(now).toISOString();
  }
  return lastIso;
}

/**
 * JSON lines on stdout, tagged with the service. Lines are gathered in a string of our own and
 * handed to the file descriptor in batches (at most FLUSH_INTERVAL_MS late, and synchronously at
 * exit): a write per request line cost about as much as the rest of a simple request, and sonic-boom
 * measures its whole pending buffer again on every write it is given, so it gets whole batches.
 */
export function createLoggers(config: Pick<ServerConfig, 'logLevel'>, service: string): Loggers {
  const destination = pino.destination({ dest: 1, sync: false });
  // Every line, pino's and the request lines, passes through `pending`, so lines keep their order
  // and never interleave mid-line.
  let pending = '';
  const handOver = () => {
    if (pending === '') return;
    destination.write(pending);
    pending = '';
  };
  const append = (line: string) => {
    pending += line;
    if (pending.length >= BUFFER_CHARS) handOver();
  };
  const flush = () => {
    handOver();
    destination.flush();
  };
  setInterval(flush, FLUSH_INTERVAL_MS).unref();
  // At exit only synchronous writes happen: what sonic-boom holds, then our own lines (handed to
  // sonic-boom now, they would go into an asynchronous write that never completes).
  process.once('exit', () => {
    destination.flushSync();
    if (pending !== '') writeSync(1, pending);
  });
  const base = { service, pid: process.pid };
  const logger = pino(
    {
      level: config.logLevel,
      base,
      timestamp: () => `,"time":"${isoNow()}"`,
      redact: { paths: ['*.token', '*.password', '*.key', 'headers.authorization', 'headers["x-service-token"]'], censor: '[redacted]' },
    },
    { write: append },
  );
  // The request line has fixed fields that hold no secret, so it is formatted directly: through
  // pino (object walk, redaction) it cost as much as the rest of a simple request. The method is
  // one the HTTP parser accepted (an HTTP token: nothing to escape); the path may hold anything.
  const prefix = `{"level":${INFO},"time":"`;
  const bindings = `","service":${JSON.stringify(service)},"pid":${process.pid},"request_id":"`;
  // Asked once per level change rather than once per request.
  let requestLines = logger.isLevelEnabled('info');
  const logRequest = (line: RequestLine) => {
    if (!requestLines) return;
    append(
      `${prefix}${isoNow()}${bindings}${line.requestId}","method":"${line.method}","path":${JSON.stringify(line.path)},"status":${line.status},"duration_ms":${line.durationMs},"msg":"request"}\n`,
    );
  };
  const setLevel = (level: ServerConfig['logLevel']) => {
    logger.level = level;
    requestLines = logger.isLevelEnabled('info');
  };
  return { logger, logRequest, flush, setLevel };
}
