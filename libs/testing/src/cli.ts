import { spawn } from 'node:child_process';
import { SVC_BIN } from '@svc/local-cluster';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built `svc` binary as a user would: arguments, environment (SVC_ADDR, ...) and stdin. */
export function runCli(args: string[], env: Record<string, string>, stdin = ''): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC_BIN, ...args], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(stdin);
  });
}
