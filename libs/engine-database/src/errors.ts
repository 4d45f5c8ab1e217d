import { ServiceError } from '@svc/api-contract';
import { InvalidSettingsError } from './plugins';

const REDACTED = '<redacted>';
// `scheme://user:secret@`, or a Go DSN's `user:secret@tcp(`; a `{{password}}` placeholder is kept.
const URL_CREDENTIALS = /(\/\/[^\s:/@]*:|^[^\s:/@]*:)(?!\{\{\s*password\s*\}\})([^\s@/]+)(@)/g;

/** Removes URL passwords and every known secret (and its percent-encoded form) from a message. */
export function scrub(message: string, secrets: readonly string[] = []): string {
  let text = message.replace(URL_CREDENTIALS, `$1${REDACTED}$3`);
  for (const secret of secrets) {
    if (secret === '') continue;
    for (const form of new Set([secret, encodeURIComponent(secret)])) text = text.split(form).join(REDACTED);
  }
  return text;
}

/**
 * Runs one call to a database. A refusal or an unreachable database becomes 502 with the
 * database's message, secrets removed; settings the plugin cannot use become 400 naming the field.
 */
export async function talkToDatabase<T>(action: string, secrets: readonly string[], call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof ServiceError) throw err;
    if (err instanceof InvalidSettingsError) throw ServiceError.badRequest(`field "${err.field}": ${scrub(err.message, secrets)}`);
    const message = err instanceof Error ? err.message || (err as { code?: string }).code || err.name : String(err);
    throw ServiceError.badGateway(`${action} failed: ${scrub(message, secrets)}`);
  }
}
