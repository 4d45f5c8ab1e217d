import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import * as path from 'node:path';

/** The built `svc` entry point (npm run build); the harness runs from the sources under jest. */
export const SVC_BIN = path.resolve(__dirname, '../../../bin/svc.js');

export interface ServerProcess {
  name: string;
  child: ChildProcess;
  /** HTTP addresses the process bound (gateways only), e.g. "127.0.0.1:41234". */
  addresses: string[];
  /** Every log line the process wrote, for assertions about logging. */
  logs: string[];
  stop(): Promise<void>;
}

/**
 * Starts `svc server ARGS` and resolves when the process logs that it started (the log line of a
 * gateway carries the addresses it bound, so port 0 works). Rejects with the process output if it
 * exits first or does not start within `timeoutMs`.
 */
export function startServerProcess(name: string, args: string[], timeoutMs = 30_000, env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, [SVC_BIN, 'server', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const logs: string[] = [];
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
    const onLine = (line: string) => {
      logs.push(line);
      if (!line.startsWith('{')) return;
      const entry = JSON.parse(line) as { msg?: string; addresses?: string[] };
      if (entry.msg === 'gateway started' || entry.msg === 'service started') {
        clearTimeout(timer);
        resolve({ name, child, addresses: entry.addresses ?? [], logs, stop });
      }
    };
    createInterface({ input: child.stdout! }).on('line', onLine);
    createInterface({ input: child.stderr! }).on('line', (line) => logs.push(line));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with code ${code} before starting:\n${logs.join('\n')}`));
    });
  });
}
