/**
 * The two real databases the database-engine suite issues users on, seen from outside the service:
 * how to point a connection at each, and how to check (and clean up) the users it creates.
 */
import { createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import { createConnection } from 'mysql2/promise';
import { Client } from 'pg';

export interface TestDatabase {
  name: 'postgresql' | 'mariadb';
  plugin: string;
  /** Body of `config/:name` for a working connection as the database's root user. */
  connection: Record<string, unknown>;
  /** Fields that make the connection fail verification, and the database's own words for why. */
  broken: { fields: Record<string, unknown>; message: RegExp };
  /** Creation statements of a plain login user. */
  createStatements: string[];
  /** A login with this password would succeed now. */
  loginWorks(user: string, password: string): Promise<boolean>;
  userExists(user: string): Promise<boolean>;
  createUser(user: string, password: string): Promise<void>;
  /** Users whose names start with `prefix` (a test's own users). */
  usersStartingWith(prefix: string): Promise<string[]>;
  dropUsersStartingWith(prefix: string): Promise<void>;
}

// --- PostgreSQL. This machine trusts every TCP login (pg_hba "trust"), so whether a password would be
// accepted is checked against the role's SCRAM-SHA-256 verifier, exactly as password authentication would.

const POSTGRES_ADMIN_URL = 'postgresql://postgres@127.0.0.1:5432/test';

async function withPostgres<T>(fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: POSTGRES_ADMIN_URL });
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
}

export function postgresRole(name: string): Promise<PostgresRole | null> {
  return withPostgres(async (client) => {
    const result = await client.query<{ rolcanlogin: boolean; rolvaliduntil: Date | null; rolpassword: string | null }>(
      'SELECT rolcanlogin, rolvaliduntil, rolpassword FROM pg_authid WHERE rolname = $1',
      [name],
    );
    const row = result.rows[0];
    return row ? { canLogin: row.rolcanlogin, validUntil: row.rolvaliduntil, verifier: row.rolpassword } : null;
  });
}

/** Whether SCRAM-SHA-256 authentication would accept `password` against a stored verifier. */
function scramAccepts(verifier: string | null, password: string): boolean {
  const match = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(verifier ?? '');
  if (!match) return false;
  const [, iterations, salt, storedKey] = match;
  const salted = pbkdf2Sync(password, Buffer.from(salt, 'base64'), Number(iterations), 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  return createHash('sha256').update(clientKey).digest('base64') === storedKey;
}

export const postgres: TestDatabase = {
  name: 'postgresql',
  plugin: 'postgresql-database-plugin',
  connection: {
    plugin_name: 'postgresql-database-plugin',
    connection_url: 'postgresql://{{username}}:{{password}}@127.0.0.1:5432/test',
    username: 'postgres',
    // Trust auth ignores it; it is still a secret the service must never echo.
    password: 'pg-root-Secret-4711',
  },
  broken: {
    fields: { connection_url: 'postgresql://{{username}}:{{password}}@127.0.0.1:5432/svc_e2e_no_such_database' },
    message: /database "svc_e2e_no_such_database" does not exist/,
  },
  createStatements: [`CREATE ROLE "{{name}}" WITH LOGIN PASSWORD '{{password}}' VALID UNTIL '{{expiration}}'`],
  async loginWorks(user, password) {
    const role = await postgresRole(user);
    if (!role?.canLogin) return false;
    if (role.validUntil && role.validUntil.getTime() <= Date.now()) return false;
    return scramAccepts(role.verifier, password);
  },
  async userExists(user) {
    return (await postgresRole(user)) !== null;
  },
  createUser: (user, password) =>
    withPostgres(async (client) => {
      await client.query(`CREATE ROLE ${client.escapeIdentifier(user)} WITH LOGIN PASSWORD ${client.escapeLiteral(password)}`);
    }),
  usersStartingWith: (prefix) =>
    withPostgres(async (client) => (await client.query<{ rolname: string }>('SELECT rolname FROM pg_roles WHERE starts_with(rolname, $1)', [prefix])).rows.map((row) => row.rolname)),
  dropUsersStartingWith: async (prefix) => {
    const roles = await postgres.usersStartingWith(prefix);
    await withPostgres(async (client) => {
      for (const role of roles) await client.query(`DROP ROLE IF EXISTS ${client.escapeIdentifier(role)}`);
    });
  },
};

// --- MariaDB enforces passwords: logins are real.

async function withMariadb<T>(fn: (query: (sql: string, values?: unknown[]) => Promise<unknown>) => Promise<T>): Promise<T> {
  const connection = await createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
  try {
    return await fn(async (sql, values) => (await connection.query(sql, values))[0]);
  } finally {
    await connection.end();
  }
}

function mariadbAccounts(prefix: string): Promise<Array<{ user: string; host: string }>> {
  return withMariadb(async (query) => (await query('SELECT User AS user, Host AS host FROM mysql.user WHERE LEFT(User, ?) = ?', [prefix.length, prefix])) as Array<{ user: string; host: string }>);
}

export const mariadb: TestDatabase & {
  /** Runs one statement as the real root (for users the tests set up themselves). */
  asRoot(sql: string, values?: unknown[]): Promise<unknown>;
} = {
  name: 'mariadb',
  plugin: 'mysql-database-plugin',
  connection: {
    plugin_name: 'mysql-database-plugin',
    connection_url: '{{username}}:{{password}}@tcp(127.0.0.1:3306)/',
    username: 'root',
    password: '',
  },
  broken: {
    fields: { password: 'maria-Wrong-Secret-4711' },
    message: /Access denied for user 'root'/,
  },
  createStatements: [`CREATE USER '{{name}}'@'%' IDENTIFIED BY '{{password}}'`],
  async loginWorks(user, password) {
    try {
      const connection = await createConnection({ host: '127.0.0.1', port: 3306, user, password, connectTimeout: 5_000 });
      await connection.query('SELECT 1');
      await connection.end();
      return true;
    } catch {
      return false;
    }
  },
  userExists: (user) => withMariadb(async (query) => ((await query('SELECT 1 FROM mysql.user WHERE User = ?', [user])) as unknown[]).length > 0),
  createUser: (user, password) => withMariadb(async (query) => void (await query('CREATE USER ?@? IDENTIFIED BY ?', [user, '%', password]))),
  usersStartingWith: async (prefix) => [...new Set((await mariadbAccounts(prefix)).map((account) => account.user))],
  dropUsersStartingWith: async (prefix) => {
    const accounts = await mariadbAccounts(prefix);
    await withMariadb(async (query) => {
      for (const { user, host } of accounts) await query('DROP USER IF EXISTS ?@?', [user, host]);
    });
  },
  asRoot: (sql, values) => withMariadb((query) => query(sql, values)),
};
