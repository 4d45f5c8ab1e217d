import { chmod, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * The token helper file (as Vault's ~/.vault-token): `svc login` writes the token there and every
 * later command sends it, unless SVC_TOKEN is set, which wins.
 */
export function tokenFilePath(env: Record<string, string | undefined>): string {
  return join(env.HOME || homedir(), '.svc-token');
}

export async function storedToken(env: Record<string, string | undefined>): Promise<string | undefined> {
  try {
    return (await readFile(tokenFilePath(env), 'utf8')).trim() || undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Writes the token readable by its owner alone, also when the file existed with a looser mode. */
export async function storeToken(env: Record<string, string | undefined>, token: string): Promise<string> {
  const file = tokenFilePath(env);
  await writeFile(file, token, { mode: 0o600 });
  await chmod(file, 0o600);
  return file;
}
