/**
 * Azure Blob Storage: azurite's blob service as a child process (in memory, no telemetry, a port of
 * its choosing), with one storage account of a random key. Azurite checks Shared Key signatures
 * as Azure does: a request signed with another key is 403 AuthorizationFailure.
 *
 * With `tls` it serves HTTPS and also accepts Azure AD bearer tokens (`--oauth basic`; azurite takes
 * them over HTTPS only): it checks their lifetime, issuer (Azure's `https://sts.windows.net/...`)
 * and audience (Storage's), not their signature, so the sign-in itself is checked by the directory
 * that issues them (`directory.ts`).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import * as path from 'node:path';
import { createInterface } from 'node:readline';

export interface AzuriteEmulator {
  /** The account's blob endpoint (azurite's path-style form: `http(s)://127.0.0.1:PORT/ACCOUNT`). */
  url: string;
  account: string;
  key: string;
  close(): Promise<void>;
}

const MAIN = path.join(__dirname, '../../../node_modules/azurite/dist/src/blob/main.js');

/** The resource Azure AD tokens for Blob Storage are issued for (their audience). */
export const STORAGE_RESOURCE = 'https://storage.azure.com';

export async function startAzurite({ account = 'snapshots', tls }: { account?: string; tls?: { cert: string; key: string } } = {}): Promise<AzuriteEmulator> {
  const key = randomBytes(64).toString('base64');
  const secure = tls ? ['--cert', tls.cert, '--key', tls.key, '--oauth', 'basic'] : [];
  const child = spawn(process.execPath, [MAIN, '--blobHost', '127.0.0.1', '--blobPort', '0', '--inMemoryPersistence', '--disableTelemetry', '--silent', ...secure], {
    env: { ...process.env, AZURITE_ACCOUNTS: `${account}:${key}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
  const listening = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      output.push(line);
      const match = /successfully listens on (https?:\/\/\S+)/.exec(line);
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
