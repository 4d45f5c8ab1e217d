/**
 * Azure Blob Storage: azurite's blob service as a child process (in memory, no telemetry, a port of
 * its choosing), with one storage account of a random key. Azurite checks Shared Key signatures
 * as Azure does: a request signed with another key is 403 AuthorizationFailure.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import * as path from 'node:path';
import { createInterface } from 'node:readline';

export interface AzuriteEmulator {
  /** The account's blob endpoint (azurite's path-style form: `http://127.0.0.1:PORT/ACCOUNT`). */
  url: string;
  account: string;
  key: string;
  close(): Promise<void>;
}

const MAIN = path.join(__dirname, '../../../node_modules/azurite/dist/src/blob/main.js');

export async function startAzurite(account = 'snapshots'): Promise<AzuriteEmulator> {
  const key = randomBytes(64).toString('base64');
  const child = spawn(process.execPath, [MAIN, '--blobHost', '127.0.0.1', '--blobPort', '0', '--inMemoryPersistence', '--disableTelemetry', '--silent'], {
    env: { ...process.env, AZURITE_ACCOUNTS: `${account}:${key}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
  const listening = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      output.push(line);
      const match = /successfully listens on (http:\/\/\S+)/.exec(line);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`azurite exited with ${code} before listening: ${output.join('\n')}`)));
  });
  const base = await listening;
  return {
    url: `${base}/${account}`,
    account,
    key,
    async close() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
