/**
 * The two real databases the database-engine suite issues users on, seen from outside the service:
 * how to point a connection at each, and how to check (and clean up) the users it creates.
 */
import { mysqlLoginWorks, mysqlUserExists, postgresLoginWorks, postgresRole, withMysql, withPostgres } from '@svc/testing';

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

// --- PostgreSQL: logins are checked against the role's SCRAM verifier (see @svc/testing).

export { postgresRole } from '@svc/testing';

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
  loginWorks: postgresLoginWorks,
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

function mariadbAccounts(prefix: string): Promise<Array<{ user: string; host: string }>> {
  return withMysql(async (query) => (await query('SELECT User AS user, Host AS host FROM mysql.user WHERE LEFT(User, ?) = ?', [prefix.length, prefix])) as Array<{ user: string; host: string }>);
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
  loginWorks: mysqlLoginWorks,
  userExists: mysqlUserExists,
  createUser: (user, password) => withMysql(async (query) => void (await query('CREATE USER ?@? IDENTIFIED BY ?', [user, '%', password]))),
  usersStartingWith: async (prefix) => [...new Set((await mariadbAccounts(prefix)).map((account) => account.user))],
  dropUsersStartingWith: async (prefix) => {
    const accounts = await mariadbAccounts(prefix);
    await withMysql(async (query) => {
      for (const { user, host } of accounts) await query('DROP USER IF EXISTS ?@?', [user, host]);
    });
  },
  asRoot: (sql, values) => withMysql((query) => query(sql, values)),
};
