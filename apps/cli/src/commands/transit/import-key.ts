import { readFile } from 'node:fs/promises';
import { UsageError } from '../args';
import type { CliIO, Command } from '../context';
import { parseData } from '../data';
import { printSecret } from '../format';
import { readAll } from '../stdin';

/** MOUNT/keys/NAME: the mount may have several segments, the key name is the last one. */
const KEY_PATH = /^(.+)\/keys\/([^/]+)$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * `transit import` and `transit import-version`, as Vault's: KEY (base64 key material: raw bytes of
 * a symmetric key, PKCS#8 DER of a private key) is wrapped locally for the mount's wrapping key and
 * sent to PATH/import or PATH/import_version with the K=V options after it.
 */
export function importCommand(operation: 'import' | 'import_version', summary: string): Command {
  const name = `transit ${operation.replace('_', '-')}`;
  return {
    args: 'MOUNT/keys/NAME KEY|@FILE|- [K=V...]',
    summary,
    flags: {},
    async run(ctx, { positionals }) {
      const [path, key, ...pairs] = positionals;
      if (!path || !key) throw new UsageError(`${name} takes a key PATH (MOUNT/keys/NAME) and the KEY to import`);
      const where = KEY_PATH.exec(path.replace(/^\/+|\/+$/g, ''));
      if (!where) throw new UsageError(`${name}: PATH must be MOUNT/keys/NAME, e.g. transit/keys/orders (got "${path}")`);
      const [, mount, keyName] = where;
      const material = decodeKey(name, await keyText(key, ctx.io));
      const options = await parseData(pairs, ctx.io);
      const transit = ctx.client.transit(mount);
      const answer = operation === 'import' ? await transit.importKey(keyName, material, options) : await transit.importKeyVersion(keyName, material, options);
      printSecret(ctx, answer, `Success! Imported key material into: ${mount}/keys/${keyName}`);
      return 0;
    },
  };
}

/** KEY itself, the contents of @FILE, or stdin for `-`: key material stays out of the shell history. */
async function keyText(key: string, io: CliIO): Promise<string> {
  if (key === '-') return readAll(io);
  if (!key.startsWith('@')) return key;
  try {
    return await readFile(key.slice(1), 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read the KEY file "${key.slice(1)}" (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
}

function decodeKey(name: string, text: string): Buffer {
  const compact = text.replace(/\s+/g, '');
  // The key is secret: the error names the problem, never the value.
  if (!BASE64.test(compact) || compact.length % 4 !== 0) throw new UsageError(`${name}: KEY must be base64-encoded key material`);
  return Buffer.from(compact, 'base64');
}
