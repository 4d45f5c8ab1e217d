import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import * as path from 'node:path';
import { MAX_WORKERS } from '@svc/config';

/**
 * The built `svc` entry point (npm run build), found from the sources (jest) or a compiled tree
 * (dist/, dist-bench/); specs compiled as ES modules have no __dirname and run in the repository.
 */
export const SVC_BIN = findUp(typeof __dirname === 'string' ? __dirname : process.cwd(), path.join('bin', 'svc.js'));

function findUp(from: string, relative: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, relative))) return path.join(dir, relative);
    if (path.dirname(dir) === dir) throw new Error(`${relative} not found above ${from}`);
  }
}

const MAX_LOG_LINES = 20_000;

export interface ServerProcess {
  name: string;
  child: ChildProcess;
  /** HTTP addresses the process bound (gateways only), e.g. "127.0.0.1:41234". */
  addresses: string[];
  /** The last log lines the process wrote (up to MAX_LOG_LINES), for assertions about logging. */
  logs: string[];
  stop(): Promise<void>;
}

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  /** The file-creation mask the process starts with (its parent's by default). */
  umask?: number;
  /** Called with every line the process writes (stdout and stderr), as it comes. */
  onLine?: (line: string) => void;
  /**
   * The process writes its output to this file rather than to a pipe read here (a benchmark: the
   * reader would compete with the server); only the start line is read back. `logs` stays empty.
   */
  logFile?: string;
}

const START_TIMEOUT_MS = 120_000;

/** The gateway workers of a server started here unless it is given some: `SVC_TEST_WORKERS`, default 1. */
export const DEFAULT_WORKERS = workersFrom(process.env.SVC_TEST_WORKERS);

function workersFrom(value: string | undefined): number {
  if (value === undefined || value === '') return 1;
  const workers = Number(value);
  if (!Number.isInteger(workers) || workers < 1 || workers > MAX_WORKERS) throw new Error(`SVC_TEST_WORKERS must be a whole number from 1 to ${MAX_WORKERS}, not "${value}"`);
  return workers;
}

/**
 * Starts `svc server ARGS` and resolves when the process logs that it started (the log line of a
 * gateway carries the addresses it bound, so port 0 works). Rejects with the process output if it
 * exits first or does not start within `timeoutMs`: a deadline for a process that hangs, generous
 * because creating embedded storage on a busy two-core machine has taken close to a minute.
 */
export function startServerProcess(name: string, args: string[], timeoutMs = START_TIMEOUT_MS, options: StartOptions = {}): Promise<ServerProcess> {
  // DEFAULT_WORKERS unless asked, not the server's default (one per CPU), which would multiply the
  // processes every test starts on a shared machine; engine services ignore the flag.
  const workers = args.some((arg) => /^--?workers(=|$)/.test(arg)) ? [] : [`-workers=${DEFAULT_WORKERS}`];
  const command = [process.execPath, SVC_BIN, 'server', ...workers, ...args];
  // Node cannot set a child's umask; a shell sets it and then becomes the server.
  const [file, ...argv] = options.umask === undefined ? command : ['/bin/sh', '-c', `umask ${options.umask.toString(8)} && exec "$@"`, 'sh', ...command];
  const output = options.logFile === undefined ? 'pipe' : openSync(options.logFile, 'a', 0o600);
  const child = spawn(file, argv, { stdio: ['ignore', output, output], env: { ...process.env, ...options.env } });
  if (typeof output === 'number') closeSync(output);
  const logs: string[] = [];
  const keep = (line: string) => {
    options.onLine?.(line);
    logs.push(line);
    if (logs.length > MAX_LOG_LINES) logs.splice(0, logs.length - MAX_LOG_LINES);
  };
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not start within ${timeoutMs} ms:\n${logs.join('\n')}`));
    }, timeoutMs);
    let started = false;
    const onLine = (line: string) => {
      keep(line);
      // Only the start line is looked into: parsing every request line would cost the process
      // reading them (a benchmark's load generator) as much as serving costs the server.
      if (started || !line.startsWith('{')) return;
      const entry = JSON.parse(line) as { msg?: string; addresses?: string[] };
      if (entry.msg === 'gateway started' || entry.msg === 'service started' || entry.msg === 'replication service started') {
        started = true;
        clearTimeout(timer);
        resolve({ name, child, addresses: entry.addresses ?? [], logs, stop });
      }
    };
    if (options.logFile === undefined) {
      createInterface({ input: child.stdout! }).on('line', onLine);
      createInterface({ input: child.stderr! }).on('line', keep);
    } else {
      followUntilStarted(options.logFile, onLine, () => started || child.exitCode !== null);
    }
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with code ${code} before starting:\n${logs.join('\n')}`));
    });
  });
}

/** How often a log file is read for the start line. */
const LOG_POLL_MS = 100;

/** Hands `onLine` each complete line appended to `file` until `done`, reading it every LOG_POLL_MS. */
function followUntilStarted(file: string, onLine: (line: string) => void, done: () => boolean): void {
  const fd = openSync(file, 'r');
  const chunk = Buffer.alloc(64 * 1024);
  let partial = '';
  const poll = () => {
    for (let read = readSync(fd, chunk); read > 0; read = readSync(fd, chunk)) {
      const lines = (partial + chunk.toString('utf8', 0, read)).split('\n');
      partial = lines.pop()!;
      for (const line of lines) onLine(line);
    }
    if (done()) closeSync(fd);
    else setTimeout(poll, LOG_POLL_MS);
  };
  poll();
}
