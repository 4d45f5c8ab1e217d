/** MySQL/MariaDB users as a client would see them; the server enforces passwords, so logins are real. */
import { createConnection } from 'mysql2/promise';

const MYSQL_HOST = { host: '127.0.0.1', port: 3306 };

/** Whether a real login with this password succeeds. */
export async function mysqlLoginWorks(user: string, password: string): Promise<boolean> {
  try {
    const connection = await createConnection({ ...MYSQL_HOST, user, password, connectTimeout: 5_000 });
    await connection.query('SELECT 1');
    await connection.end();
    return true;
  } catch {
    return false;
  }
}

/** Runs `fn` with a query function connected as root. */
export async function withMysql<T>(fn: (query: (sql: string, values?: unknown[]) => Promise<unknown>) => Promise<T>): Promise<T> {
  const connection = await createConnection({ ...MYSQL_HOST, user: 'root' });
  try {
    return await fn(async (sql, values) => (await connection.query(sql, values))[0]);
  } finally {
    await connection.end();
  }
}

export async function mysqlUserExists(user: string): Promise<boolean> {
  return withMysql(async (query) => ((await query('SELECT 1 FROM mysql.user WHERE User = ?', [user])) as unknown[]).length > 0);
}
