import { readFile } from 'node:fs/promises';
import { UsageError } from '../args';

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The API takes PGP public keys as base64 of the binary key. The CLI takes paths to key files that
 * hold the key ASCII-armored, as base64 text, or as binary, and converts them.
 */
export async function readPgpKeyFile(path: string): Promise<string> {
  let content: Buffer;
  try {
    content = await readFile(path);
  } catch (err) {
    throw new UsageError(`cannot read PGP key file "${path}" (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
  const text = content.toString('utf8').trim();
  if (text.startsWith('-----BEGIN PGP PUBLIC KEY BLOCK-----')) {
    try {
      // openpgp is large: loaded only when a key file is given.
      const { readKey } = await import('openpgp');
      const key = await readKey({ armoredKey: text });
      return Buffer.from(key.write()).toString('base64');
    } catch (err) {
      throw new UsageError(`PGP key file "${path}" is not a valid public key: ${(err as Error).message}`);
    }
  }
  const compact = text.replace(/\s+/g, '');
  return BASE64.test(compact) ? compact : content.toString('base64');
}
