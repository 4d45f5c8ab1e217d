import { ServiceError } from '@svc/api-contract';
import type { Key } from 'openpgp';

const ARMOR_HEADER = '-----BEGIN PGP';

/**
 * Reads a PGP public key given as base64 of the binary key (Vault's format), or as armored text
 * (directly or base64-encoded). `field` names the request entry in errors, e.g. `pgp_keys[2]`.
 */
export async function readPgpPublicKey(publicKey: string, field: string): Promise<Key> {
  const invalid = ServiceError.badRequest(`${field} is not a valid PGP public key`);
  // Loaded by the operations that take PGP keys only.
  const { readKey } = await import('openpgp');
  let key: Key;
  try {
    const armored = armoredText(publicKey.trim());
    key = await (armored ? readKey({ armoredKey: armored }) : readKey({ binaryKey: Buffer.from(publicKey, 'base64') }));
  } catch {
    throw invalid;
  }
  if (key.isPrivate()) throw invalid;
  try {
    await key.getEncryptionKey();
  } catch {
    throw ServiceError.badRequest(`${field} has no valid key usable for encryption`);
  }
  return key;
}

/** The armored text when `text` is armored or base64 of armored text; undefined for base64 of a binary key. */
function armoredText(text: string): string | undefined {
  if (text.startsWith(ARMOR_HEADER)) return text;
  const decoded = Buffer.from(text, 'base64').toString('utf8');
  return decoded.startsWith(ARMOR_HEADER) ? decoded : undefined;
}

/** Encrypts to the key; the result is a binary OpenPGP message (`gpg --decrypt` reads it). */
export async function encryptForPgpKey(publicKey: string, plaintext: Uint8Array, field = 'pgp_key'): Promise<Uint8Array> {
  const key = await readPgpPublicKey(publicKey, field);
  const { createMessage, encrypt } = await import('openpgp');
  return encrypt({ message: await createMessage({ binary: plaintext }), encryptionKeys: key, format: 'binary' });
}

/** Lowercase hex fingerprint of the primary key, as Vault reports in `pgp_fingerprints`. */
export async function fingerprint(publicKey: string, field = 'pgp_key'): Promise<string> {
  return (await readPgpPublicKey(publicKey, field)).getFingerprint();
}

/** The `root_token` value of an init with `root_token_pgp_key`: base64 of the encrypted token. */
export async function encryptRootToken(pgpKeyBase64: string, token: string): Promise<string> {
  const encrypted = await encryptForPgpKey(pgpKeyBase64, Buffer.from(token, 'utf8'), 'root_token_pgp_key');
  return Buffer.from(encrypted).toString('base64');
}
