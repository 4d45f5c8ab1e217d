import type { Client } from 'pg';

/** What opens a PostgreSQL storage table: a server (any process of one, any number at once) or a storage migration. */
export type TableUse = 'server' | 'migration';

/** How long connecting, and each statement of the lock's connection, may take. */
const LOCK_DEADLINE_MS = 10_000;

/**
 * Who uses a PostgreSQL storage table, held for as long as a store is open: a session advisory
 * lock on a connection of its own, shared by servers (replicas and services run together) and
 * exclusive for `svc operator migrate`, so a server never runs on a table being migrated and a
 * migration never copies a table a server is changing. Each refuses at once while the other holds
 * it. The lock is keyed by the table name; advisory locks are per database.
 */
export class TableUseLock {
  private constructor(private readonly client: Client) {}

  static async take(connectionUrl: string, table: string, use: TableUse): Promise<TableUseLock> {
    const { Client } = await import('pg');
    const client = new Client({ connectionString: connectionUrl, connectionTimeoutMillis: LOCK_DEADLINE_MS, query_timeout: LOCK_DEADLINE_MS });
    // A connection lost later ends its session, and the lock with it; an unheard 'error' would end the process.
    client.on('error', () => undefined);
    await client.connect();
    try {
      const key = `svc-storage-use ${table}`;
      const tryLock = async (fn: 'pg_try_advisory_lock' | 'pg_try_advisory_lock_shared') =>
        (await client.query<{ taken: boolean }>(`SELECT ${fn}(hashtextextended($1::text, 0)) AS taken`, [key])).rows[0].taken;
      if (use === 'server' && !(await tryLock('pg_try_advisory_lock_shared'))) {
        throw new Error(`postgresql storage table "${table}" is being migrated (svc operator migrate holds it): start the server once the migration has finished`);
      }
      // Refused the exclusive lock: servers hold it if a shared one is free, else another migration does.
      if (use === 'migration' && !(await tryLock('pg_try_advisory_lock'))) {
        throw new Error(
          (await tryLock('pg_try_advisory_lock_shared'))
            ? `postgresql storage table "${table}" is in use by a running server: stop every server and service using it before migrating it`
            : `postgresql storage table "${table}" is being migrated by another svc operator migrate`,
        );
      }
      return new TableUseLock(client);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
  }

  /** Ends the lock's session, which releases it. */
  release(): Promise<void> {
    return this.client.end();
  }
}
