import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { api, POSTGRES_URL } from '@svc/testing';
import { measure, setUp, startDevServer, startFloor } from '../run';
import type { Scenario } from './scenario';

/**
 * `GET /v1/database/creds/:role` on PostgreSQL through the all-in-one dev server (a real CREATE ROLE
 * and a lease per request), beside a bare node:http endpoint running the same CREATE ROLE with `pg`
 * (pg-create-role). Both use as many database connections as there are client connections; the
 * concurrency is low because every request is DDL on the shared catalogue. Afterwards the leases are
 * revoked (which drops the server's roles) and any role left by either side is dropped by prefix.
 */
const CONCURRENCY = 8;
const ROLE = 'bench';
const CREATE_ROLE = `CREATE ROLE "{{name}}" WITH LOGIN PASSWORD '{{password}}' VALID UNTIL '{{expiration}}'`;

async function dropRolesStartingWith(prefix: string): Promise<void> {
  const client = new Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    const roles = await client.query<{ rolname: string }>('SELECT rolname FROM pg_roles WHERE starts_with(rolname, $1)', [prefix]);
    for (const { rolname } of roles.rows) await client.query(`DROP ROLE IF EXISTS ${client.escapeIdentifier(rolname)}`);
  } finally {
    await client.end();
  }
}

export const databaseCreds: Scenario = {
  name: 'database-creds',
  needsPostgres: true,
  async run() {
    const prefix = `svc_bench_${randomBytes(3).toString('hex')}_`;
    const server = await startDevServer();
    try {
      const floor = await startFloor('pg-create-role', { FLOOR_PG_URL: POSTGRES_URL, FLOOR_PG_POOL: String(CONCURRENCY), FLOOR_ROLE_PREFIX: `${prefix}f_` });
      try {
        await setUp(server.url, server.token, '/v1/sys/mounts/database', { type: 'database' });
        await setUp(server.url, server.token, '/v1/database/config/pg', {
          plugin_name: 'postgresql-database-plugin',
          connection_url: 'postgresql://{{username}}:{{password}}@127.0.0.1:5432/test',
          username: 'postgres',
          password: 'bench',
          allowed_roles: ROLE,
          max_open_connections: CONCURRENCY,
          username_template: `${prefix}s_{{random 20}}`,
        });
        await setUp(server.url, server.token, `/v1/database/roles/${ROLE}`, { db_name: 'pg', creation_statements: [CREATE_ROLE], default_ttl: '1h' });

        const headers = { 'x-service-token': server.token };
        const target = await measure({ url: server.url, method: 'GET', path: `/v1/database/creds/${ROLE}`, headers }, CONCURRENCY);
        const base = await measure({ url: floor.url, method: 'GET', path: `/v1/database/creds/${ROLE}`, headers }, CONCURRENCY);
        return { name: this.name, target, floor: base, ratio: target.reqPerSec / base.reqPerSec };
      } finally {
        floor.stop();
        const revoked = await api(server.url, 'PUT', '/v1/sys/leases/revoke-prefix/database/', { token: server.token });
        if (revoked.status !== 204) process.stderr.write(`revoke-prefix answered ${revoked.status} ${revoked.text}; dropping the roles by name\n`);
      }
    } finally {
      await server.stop();
      await dropRolesStartingWith(prefix);
    }
  },
};
