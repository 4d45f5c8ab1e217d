/**
 * PostgreSQL users as a client would see them. This machine trusts every TCP login (pg_hba "trust"),
 * so whether a password would be accepted is checked against the role's SCRAM-SHA-256 verifier,
 * exactly as password authentication would.
 */
import { createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import { Client } from 'pg';
import { POSTGRES_URL } from '@svc/local-cluster';

/** Runs `fn` with a connection as the server's superuser (to POSTGRES_URL's database, or the one of `url`). */
export async function withPostgres<T>(fn: (client: Client) => Promise<T>, url = POSTGRES_URL): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export interface PostgresRole {
  canLogin: boolean;
  validUntil: Date | null;
  verifier: string | null;
  comment: string | null;
}

export function postgresRole(name: string): Promise<PostgresRole | null> {
  return withPostgres(async (client) => {
    const result = await client.query<{ rolcanlogin: boolean; rolvaliduntil: Date | null; rolpassword: string | null; comment: string | null }>(
      `SELECT rolcanlogin, rolvaliduntil, rolpassword, shobj_description(oid, 'pg_authid') AS comment FROM pg_authid WHERE rolname = $1`,
      [name],
    );
    const row = result.rows[0];
    return row ? { canLogin: row.rolcanlogin, validUntil: row.rolvaliduntil, verifier: row.rolpassword, comment: row.comment } : null;
  });
}

/** Whether SCRAM-SHA-256 authentication would accept `password` against a stored verifier. */
export function scramAccepts(verifier: string | null, password: string): boolean {
  const match = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(verifier ?? '');
  if (!match) return false;
  const [, iterations, salt, storedKey] = match;
  const salted = pbkdf2Sync(password, Buffer.from(salt, 'base64'), Number(iterations), 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  return createHash('sha256').update(clientKey).digest('base64') === storedKey;
}

/** A login with this password would succeed: the role exists, may log in, has not expired, and the password matches. */
export async function postgresLoginWorks(name: string, password: string): Promise<boolean> {
  const role = await postgresRole(name);
  if (!role?.canLogin) return false;
  if (role.validUntil && role.validUntil.getTime() <= Date.now()) return false;
  return scramAccepts(role.verifier, password);
}
