/**
 * The database credentials engine through the gateway, in both topologies (distributed: the engine
 * is its own `database` process on NATS), against real PostgreSQL and MariaDB: connections, dynamic
 * credentials under core leases (lookup, renew, revoke, expiry, token revocation), static roles,
 * rotate-root, password policies, bad input, and what a user sees when the service or database is gone.
 */
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DATABASE_TIMEOUT_MS } from '@svc/engine-database';
import { api, closedPort, eventually, initAndUnseal, REDIS_ADDRESS, startSilentListener, startTopology, withPostgres, type ApiBody, type ApiResponse, type Topology, type TopologyKind } from '@svc/testing';
import { startStallingProxy } from './emulators/stalling-proxy';
import { mariadb, postgres, postgresRole, type TestDatabase } from './database-servers';

interface Creds {
  status: number;
  errors: string[];
  username: string;
  password: string;
  leaseId: string;
  leaseDuration: number;
  renewable: boolean;
}

/** How far a database's clock-derived expiry may sit from the one the test expects. */
const CLOCK_SLACK_MS = 15_000;

describe.each<TopologyKind>(['all-in-one', 'distributed'])('database engine, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let rootToken: string;
  /** Name prefixes of the database users each test created, dropped after it. */
  let ownedPrefixes: Array<{ db: TestDatabase; prefix: string }> = [];

  beforeAll(async () => {
    topology = await startTopology(kind, { services: ['database'] });
    url = topology.urls[0];
    ({ rootToken } = await initAndUnseal(url));
    expect((await api(url, 'POST', '/v1/sys/mounts/database', { token: rootToken, body: { type: 'database' } })).status).toBe(204);
  }, 120_000);

  afterEach(async () => {
    for (const { db, prefix } of ownedPrefixes) await db.dropUsersStartingWith(prefix);
    ownedPrefixes = [];
  });

  afterAll(() => topology?.stop());

  function call(method: string, path: string, body?: unknown, token = rootToken): Promise<ApiResponse> {
    return api(url, method, `/v1/${path}`, { token, body });
  }

  /** A prefix no other test or run uses; the database's users starting with it are dropped after the test. */
  function ownPrefix(db: TestDatabase): string {
    const prefix = `e2e${randomBytes(3).toString('hex')}`;
    ownedPrefixes.push({ db, prefix });
    return prefix;
  }

  /** Writes a connection whose dynamic users are named `<prefix>_<role>_<random>`; returns its name and prefix. */
  async function connect(db: TestDatabase, fields: Record<string, unknown> = {}, mount = 'database'): Promise<{ name: string; prefix: string }> {
    const prefix = ownPrefix(db);
    const name = `${db.name}-${prefix}`;
    const written = await call('POST', `${mount}/config/${name}`, {
      ...db.connection,
      allowed_roles: '*',
      username_template: `${prefix}_{{.RoleName | truncate 6}}_{{random 8}}`,
      ...fields,
    });
    expect(written.status).toBe(204);
    return { name, prefix };
  }

  async function writeRole(path: string, body: Record<string, unknown>): Promise<void> {
    const written = await call('POST', path, body);
    expect({ status: written.status, errors: written.body?.errors }).toEqual({ status: 204, errors: undefined });
  }

  async function readCreds(path: string, token = rootToken): Promise<Creds> {
    const res = await call('GET', path, undefined, token);
    const data = (res.body?.data ?? {}) as { username?: string; password?: string };
    return {
      status: res.status,
      errors: res.body?.errors ?? [],
      username: data.username ?? '',
      password: data.password ?? '',
      leaseId: String(res.body?.lease_id ?? ''),
      leaseDuration: Number(res.body?.lease_duration ?? 0),
      renewable: res.body?.renewable === true,
    };
  }

  function lookup(leaseId: string): Promise<ApiResponse<ApiBody & { data: { id: string; ttl: number; renewable: boolean } }>> {
    return api(url, 'PUT', '/v1/sys/leases/lookup', { token: rootToken, body: { lease_id: leaseId } });
  }

  async function expectValidUntilNear(user: string, secondsFromNow: number): Promise<void> {
    const validUntil = (await postgresRole(user))!.validUntil!.getTime();
    expect(Math.abs(validUntil - (Date.now() + secondsFromNow * 1000))).toBeLessThan(CLOCK_SLACK_MS);
  }

  test('a Redis server that stops answering on an open connection: creds answer 502 within the deadline, and work again after', async () => {
    const proxy = await startStallingProxy(`tcp://${REDIS_ADDRESS}`);
    try {
      const name = `redis-${randomBytes(3).toString('hex')}`;
      const { port } = new URL(proxy.url);
      expect((await call('POST', `database/config/${name}`, { plugin_name: 'redis-database-plugin', host: '127.0.0.1', port: Number(port), allowed_roles: '*' })).status).toBe(204);
      await writeRole(`database/roles/${name}`, { db_name: name, creation_statements: ['["~svc-e2e:*", "+get"]'], default_ttl: '5m' });
      expect((await readCreds(`database/creds/${name}`)).status).toBe(200);
      proxy.stall();
      const started = Date.now();
      const stalled = await readCreds(`database/creds/${name}`);
      expect(stalled.status).toBe(502);
      expect(stalled.errors.join(' ')).toMatch(/timed out|timeout/i);
      // The creation's statements, then the clean-up of what they may have done, each within the deadline.
      expect(Date.now() - started).toBeLessThan(3 * DATABASE_TIMEOUT_MS);
      proxy.resume();
      expect((await readCreds(`database/creds/${name}`)).status).toBe(200);
      // The users it made go with their leases.
      expect((await api(url, 'PUT', `/v1/sys/leases/revoke-prefix/database/creds/${name}`, { token: rootToken })).status).toBe(204);
    } finally {
      await proxy.close();
    }
  });

  describe.each<TestDatabase>([postgres, mariadb])('$name', (db) => {
    test('a connection is verified when written: a bad password or URL fails with the database message and no secret', async () => {
      const name = `${db.name}-broken-${randomBytes(3).toString('hex')}`;
      const refused = await call('POST', `database/config/${name}`, { ...db.connection, ...db.broken.fields });
      expect(refused.status).toBe(502);
      expect(refused.body.errors.join(' ')).toMatch(db.broken.message);
      for (const secret of [db.connection.password, db.broken.fields.password]) {
        if (typeof secret === 'string' && secret !== '') expect(refused.text).not.toContain(secret);
      }
      expect((await call('GET', `database/config/${name}`)).status).toBe(404);

      const { name: working } = await connect(db);
      const read = await call('GET', `database/config/${working}`);
      expect(read.status).toBe(200);
      expect(read.body.data).toMatchObject({ plugin_name: db.plugin, allowed_roles: ['*'], connection_details: { username: db.connection.username } });
      if (db.connection.password) expect(read.text).not.toContain(db.connection.password);
    });

    test('creds create a user that logs in under a lease; lookup, renew and revoke act on it', async () => {
      const { name, prefix } = await connect(db);
      await writeRole(`database/roles/${db.name}-dyn`, { db_name: name, creation_statements: db.createStatements, default_ttl: '10m', max_ttl: '1h' });

      const creds = await readCreds(`database/creds/${db.name}-dyn`);
      expect(creds).toMatchObject({ status: 200, leaseDuration: 600, renewable: true });
      expect(creds.username.startsWith(`${prefix}_`)).toBe(true);
      expect(creds.leaseId.startsWith(`database/creds/${db.name}-dyn/`)).toBe(true);
      expect(await db.loginWorks(creds.username, creds.password)).toBe(true);
      expect(await db.loginWorks(creds.username, `${creds.password}x`)).toBe(false);
      if (db === postgres) await expectValidUntilNear(creds.username, 600);

      const found = await lookup(creds.leaseId);
      expect(found.status).toBe(200);
      expect(found.body.data).toMatchObject({ id: creds.leaseId, renewable: true });
      expect(found.body.data.ttl).toBeGreaterThan(590);
      expect(found.body.data.ttl).toBeLessThanOrEqual(600);

      const renewed = await api(url, 'PUT', '/v1/sys/leases/renew', { token: rootToken, body: { lease_id: creds.leaseId, increment: '30m' } });
      expect(renewed.status).toBe(200);
      expect(renewed.body).toMatchObject({ lease_id: creds.leaseId, lease_duration: 1800, renewable: true });
      expect((await lookup(creds.leaseId)).body.data.ttl).toBeGreaterThan(1790);
      if (db === postgres) await expectValidUntilNear(creds.username, 1800);

      // Renewal never goes past max_ttl counted from issue.
      const capped = await api(url, 'PUT', '/v1/sys/leases/renew', { token: rootToken, body: { lease_id: creds.leaseId, increment: '100h' } });
      expect(capped.status).toBe(200);
      expect(capped.body.lease_duration).toBeGreaterThan(3500);
      expect(capped.body.lease_duration).toBeLessThanOrEqual(3600);
      if (db === postgres) await expectValidUntilNear(creds.username, 3600);

      expect((await api(url, 'PUT', '/v1/sys/leases/revoke', { token: rootToken, body: { lease_id: creds.leaseId } })).status).toBe(204);
      expect(await db.userExists(creds.username)).toBe(false);
      expect(await db.loginWorks(creds.username, creds.password)).toBe(false);
      expect((await lookup(creds.leaseId)).status).toBe(400);
    });

    test("lease_duration is clamped to the role's max_ttl and to the mount's tuned maximum", async () => {
      const { name } = await connect(db);
      await writeRole(`database/roles/${db.name}-capped`, { db_name: name, creation_statements: db.createStatements, max_ttl: '5m' });
      const capped = await readCreds(`database/creds/${db.name}-capped`);
      expect(capped).toMatchObject({ status: 200, leaseDuration: 300 });
      if (db === postgres) await expectValidUntilNear(capped.username, 300);

      // A mount tuned to 2 minutes caps a role that asks for an hour; disabling it revokes what it issued.
      const mount = `db-tuned-${randomBytes(3).toString('hex')}`;
      expect((await call('POST', `sys/mounts/${mount}`, { type: 'database', config: { max_lease_ttl: '2m' } })).status).toBe(204);
      const { name: tunedConnection } = await connect(db, {}, mount);
      await writeRole(`${mount}/roles/long`, { db_name: tunedConnection, creation_statements: db.createStatements, default_ttl: '1h', max_ttl: '1h' });
      const tuned = await readCreds(`${mount}/creds/long`);
      expect(tuned).toMatchObject({ status: 200, leaseDuration: 120 });
      expect(await db.loginWorks(tuned.username, tuned.password)).toBe(true);
      expect((await call('DELETE', `sys/mounts/${mount}`)).status).toBe(204);
      expect(await db.userExists(tuned.username)).toBe(false);
    });

    test('a lease with default_ttl 2s expires by itself and its user is dropped', async () => {
      const { name } = await connect(db);
      await writeRole(`database/roles/${db.name}-brief`, { db_name: name, creation_statements: db.createStatements, default_ttl: '2s' });
      const creds = await readCreds(`database/creds/${db.name}-brief`);
      expect(creds).toMatchObject({ status: 200, leaseDuration: 2 });
      expect(await db.userExists(creds.username)).toBe(true);
      // The expiration manager drops the user, then the lease.
      await eventually(async () => !(await db.userExists(creds.username)) && (await lookup(creds.leaseId)).status === 400, 15_000, 200);
    });

    test('revoking a token revokes the credentials it read', async () => {
      const { name } = await connect(db);
      await writeRole(`database/roles/${db.name}-child`, { db_name: name, creation_statements: db.createStatements, default_ttl: '1h' });
      const created = await api<{ auth: { client_token: string } }>(url, 'POST', '/v1/auth/token/create', { token: rootToken, body: { policies: ['root'] } });
      expect(created.status).toBe(200);
      const child = created.body.auth.client_token;

      const creds = await readCreds(`database/creds/${db.name}-child`, child);
      expect(creds.status).toBe(200);
      expect(await db.loginWorks(creds.username, creds.password)).toBe(true);

      expect((await call('POST', 'auth/token/revoke', { token: child })).status).toBe(204);
      await eventually(async () => !(await db.userExists(creds.username)), 10_000, 100);
      expect((await lookup(creds.leaseId)).status).toBe(400);
      expect((await readCreds(`database/creds/${db.name}-child`, child)).status).toBe(403);
    });

    test('static roles: creation rotates, static-creds returns the current password, rotate-role changes it', async () => {
      const { name, prefix } = await connect(db);
      const user = `${prefix}_static`;
      const initial = 'Initial-password-1';
      await db.createUser(user, initial);

      await writeRole(`database/static-roles/${db.name}-static`, { db_name: name, username: user, rotation_period: '1h' });
      expect(await db.loginWorks(user, initial)).toBe(false);
      const first = await call('GET', `database/static-creds/${db.name}-static`);
      expect(first.status).toBe(200);
      expect(first.body.data).toMatchObject({ username: user, rotation_period: 3600 });
      expect(first.body.data.ttl).toBeGreaterThan(3500);
      const firstPassword = first.body.data.password as string;
      expect(await db.loginWorks(user, firstPassword)).toBe(true);

      expect((await call('POST', `database/rotate-role/${db.name}-static`)).status).toBe(204);
      const secondPassword = (await call('GET', `database/static-creds/${db.name}-static`)).body.data.password as string;
      expect(secondPassword).not.toBe(firstPassword);
      expect(await db.loginWorks(user, firstPassword)).toBe(false);
      expect(await db.loginWorks(user, secondPassword)).toBe(true);

      // Deleting the static role leaves the user in place, as documented.
      expect((await call('DELETE', `database/static-roles/${db.name}-static`)).status).toBe(204);
      expect(await db.loginWorks(user, secondPassword)).toBe(true);
    });

    test('bad SQL in creation statements is refused with the database message and leaves no user behind', async () => {
      const { name, prefix } = await connect(db);
      await writeRole(`database/roles/${db.name}-broken`, { db_name: name, creation_statements: [...db.createStatements, 'SELEKT nonsense'] });
      const creds = await readCreds(`database/creds/${db.name}-broken`);
      expect(creds.status).toBe(502);
      expect(creds.errors.join(' ')).toMatch(/syntax/i);
      expect(creds.errors.join(' ')).toMatch(/SELEKT|nonsense/);
      expect(await db.usersStartingWith(prefix)).toEqual([]);
    });

    test('a database that accepts and never answers: verification answers 502 naming the timeout within the deadline', async () => {
      const silent = await startSilentListener();
      try {
        const hung = { ...db.connection, connection_url: String(db.connection.connection_url).replace(/:(5432|3306)/, `:${silent.port}`) };
        const started = Date.now();
        const res = await call('POST', `database/config/${db.name}-silent`, hung);
        expect([res.status, res.body.errors.join(' ')]).toEqual([502, expect.stringMatching(/^verify connection failed: .*(timeout|ETIMEDOUT)/i)]);
        // One connection attempt: with room for a loaded machine, well short of a hang.
        expect(Date.now() - started).toBeLessThan(2 * DATABASE_TIMEOUT_MS);
        expect(silent.accepted()).toBeGreaterThanOrEqual(1);
      } finally {
        await silent.close();
      }
    });

    test('a database that stops answering on an open connection: creds answer 502 within the deadline', async () => {
      const server = /127\.0\.0\.1:(5432|3306)/;
      const direct = String(db.connection.connection_url);
      const proxy = await startStallingProxy(`tcp://${server.exec(direct)![0]}`);
      try {
        const through = direct.replace(server, new URL(proxy.url).host);
        const { name } = await connect(db, { connection_url: through, max_open_connections: 1 });
        await writeRole(`database/roles/${db.name}-stalled`, { db_name: name, creation_statements: db.createStatements });
        expect((await readCreds(`database/creds/${db.name}-stalled`)).status).toBe(200);
        proxy.stall();
        const started = Date.now();
        const stalled = await readCreds(`database/creds/${db.name}-stalled`);
        expect(stalled.status).toBe(502);
        expect(stalled.errors.join(' ')).toMatch(/timeout|timed out/i);
        // The creation's statements, then the clean-up of what they may have done, each within the deadline.
        expect(Date.now() - started).toBeLessThan(3 * DATABASE_TIMEOUT_MS);
      } finally {
        await proxy.close();
      }
    });

    test('a database that is down: verification and creds fail with 502 naming the refused connection', async () => {
      const port = await closedPort();
      const down = { ...db.connection, connection_url: String(db.connection.connection_url).replace(/:(5432|3306)/, `:${port}`) };
      const name = `${db.name}-down-${port}`;
      const refused = await call('POST', `database/config/${name}`, down);
      expect(refused.status).toBe(502);
      expect(refused.body.errors.join(' ')).toMatch(new RegExp(`verify connection failed: .*ECONNREFUSED 127\\.0\\.0\\.1:${port}`));

      expect((await call('POST', `database/config/${name}`, { ...down, verify_connection: false, allowed_roles: '*' })).status).toBe(204);
      await writeRole(`database/roles/${db.name}-down`, { db_name: name, creation_statements: db.createStatements });
      const creds = await readCreds(`database/creds/${db.name}-down`);
      expect(creds.status).toBe(502);
      expect(creds.errors.join(' ')).toMatch(new RegExp(`create user failed: .*ECONNREFUSED 127\\.0\\.0\\.1:${port}`));
      expect((await call('DELETE', `database/config/${name}`)).status).toBe(204);
    });
  });

  test("rotate-root changes the connection user's password: the old one stops working, the connection keeps working", async () => {
    const prefix = ownPrefix(mariadb);
    const admin = `${prefix}_admin`;
    const initial = 'Admin-initial-password-1';
    await mariadb.createUser(admin, initial);
    await mariadb.asRoot('GRANT ALL PRIVILEGES ON *.* TO ?@? WITH GRANT OPTION', [admin, '%']);
    const { name } = await connect(mariadb, { username: admin, password: initial });

    expect((await call('POST', `database/rotate-root/${name}`)).status).toBe(204);
    expect(await mariadb.loginWorks(admin, initial)).toBe(false);
    expect((await call('GET', `database/config/${name}`)).text).not.toContain(initial);

    // The engine now uses the new password, which only it knows.
    await writeRole('database/roles/after-rotate-root', { db_name: name, creation_statements: mariadb.createStatements });
    const creds = await readCreds('database/creds/after-rotate-root');
    expect(creds.status).toBe(200);
    expect(await mariadb.loginWorks(creds.username, creds.password)).toBe(true);
  });

  test('a revocation the database refuses keeps the lease, shows the failure, and succeeds once the database allows it', async () => {
    const prefix = ownPrefix(mariadb);
    const journal = `${prefix}_journal`;
    const { name } = await connect(mariadb);
    // Revocation first records the user in a table that does not exist yet, so the database refuses it.
    await writeRole('database/roles/kept', {
      db_name: name,
      creation_statements: mariadb.createStatements,
      revocation_statements: [`INSERT INTO test.${journal} VALUES ('{{name}}')`, "DROP USER '{{name}}'@'%'"],
    });
    const creds = await readCreds('database/creds/kept');
    expect(creds.status).toBe(200);
    try {
      const refused = await call('POST', 'sys/leases/revoke', { lease_id: creds.leaseId });
      expect(refused.status).toBe(502);
      expect(refused.body.errors[0]).toMatch(new RegExp(journal));
      const kept = await call('POST', 'sys/leases/lookup', { lease_id: creds.leaseId });
      expect(kept.status).toBe(200);
      expect(kept.body.data).toMatchObject({ id: creds.leaseId, revoke_attempts: 1 });
      expect(String(kept.body.data.last_revoke_error)).toMatch(new RegExp(journal));
      expect(await mariadb.loginWorks(creds.username, creds.password)).toBe(true);

      await mariadb.asRoot(`CREATE TABLE test.${journal} (name VARCHAR(128))`);
      expect((await call('POST', 'sys/leases/revoke', { lease_id: creds.leaseId })).status).toBe(204);
      expect(await mariadb.loginWorks(creds.username, creds.password)).toBe(false);
      expect((await call('POST', 'sys/leases/lookup', { lease_id: creds.leaseId })).status).toBe(400);
    } finally {
      await mariadb.asRoot(`DROP TABLE IF EXISTS test.${journal}`);
    }
  });

  test('revoke-prefix matches whole path segments: revoking creds/<role> leaves creds/<role>2 alone', async () => {
    const { name, prefix } = await connect(postgres);
    const role = `${prefix}seg`;
    for (const r of [role, `${role}2`]) await writeRole(`database/roles/${r}`, { db_name: name, creation_statements: postgres.createStatements });
    const named = await readCreds(`database/creds/${role}`);
    const neighbour = await readCreds(`database/creds/${role}2`);

    expect((await call('POST', `sys/leases/revoke-prefix/database/creds/${role}`)).status).toBe(204);
    expect(await postgres.userExists(named.username)).toBe(false);
    expect((await lookup(named.leaseId)).status).toBe(400);
    expect(await postgres.loginWorks(neighbour.username, neighbour.password)).toBe(true);
    expect((await lookup(neighbour.leaseId)).status).toBe(200);

    // A prefix that is a whole lease id revokes that lease (Vault's rule), here through the legacy path.
    expect((await call('POST', `sys/revoke-prefix/${neighbour.leaseId}`)).status).toBe(204);
    expect(await postgres.userExists(neighbour.username)).toBe(false);
  });

  test('revoke-force still has the engine revoke; a refusal is logged and the lease removed anyway', async () => {
    const { name, prefix } = await connect(mariadb);
    const journal = `${prefix}_journal`;
    await writeRole('database/roles/forced', { db_name: name, creation_statements: mariadb.createStatements });
    await writeRole('database/roles/forced-refused', {
      db_name: name,
      creation_statements: mariadb.createStatements,
      revocation_statements: [`INSERT INTO test.${journal} VALUES ('{{name}}')`],
    });
    const revocable = await readCreds('database/creds/forced');
    const refused = await readCreds('database/creds/forced-refused');

    expect((await call('POST', 'sys/leases/revoke-force/database/creds/forced')).status).toBe(204);
    expect(await mariadb.loginWorks(revocable.username, revocable.password)).toBe(false);
    expect((await lookup(revocable.leaseId)).status).toBe(400);
    // forced-refused is its own segment: untouched by the call above.
    expect((await lookup(refused.leaseId)).status).toBe(200);

    expect((await call('POST', 'sys/revoke-force/database/creds/forced-refused')).status).toBe(204);
    expect((await lookup(refused.leaseId)).status).toBe(400);
    const logs = () => topology.processes.flatMap((p) => p.logs);
    await eventually(async () => logs().some((line) => line.includes(refused.leaseId) && line.includes('revoke-force')));
    expect(logs().find((line) => line.includes(refused.leaseId) && line.includes('revoke-force'))).toMatch(new RegExp(journal));
    expect(logs().join('\n')).not.toContain(refused.password);
  });

  test('the legacy sys/renew and sys/revoke serve the same handlers, lease id in the body or the URL', async () => {
    const { name } = await connect(postgres);
    await writeRole('database/roles/legacy', { db_name: name, creation_statements: postgres.createStatements, default_ttl: '1h', max_ttl: '2h' });
    const creds = await readCreds('database/creds/legacy');
    // A second may pass between renewal and answer: the TTL is then one short.
    const renewed = await call('PUT', `sys/renew/${creds.leaseId}`, { increment: 600 });
    expect({ status: renewed.status, lease_id: renewed.body.lease_id }).toEqual({ status: 200, lease_id: creds.leaseId });
    expect(600 - Number(renewed.body.lease_duration)).toBeLessThanOrEqual(1);
    await expectValidUntilNear(creds.username, 600);
    expect(900 - Number((await call('PUT', 'sys/renew', { lease_id: creds.leaseId, increment: 900 })).body.lease_duration)).toBeLessThanOrEqual(1);
    expect((await call('PUT', 'sys/revoke', {})).body.errors).toEqual(['lease_id must be specified']);

    expect((await call('PUT', `sys/revoke/${creds.leaseId}`)).status).toBe(204);
    expect(await postgres.userExists(creds.username)).toBe(false);
    expect((await lookup(creds.leaseId)).status).toBe(400);
  });

  test('default PostgreSQL revocation works with a CREATEROLE connection user that is not a superuser', async () => {
    const prefix = ownPrefix(postgres);
    const admin = `${prefix}_admin`;
    const table = `${prefix}_data`;
    await withPostgres(async (client) => {
      await client.query(`CREATE ROLE ${admin} LOGIN CREATEROLE NOSUPERUSER PASSWORD 'Admin-password-1'`);
      await client.query(`GRANT CREATE ON SCHEMA public TO ${admin}`);
      await client.query(`CREATE TABLE public.${table} (id int)`);
      await client.query(`ALTER TABLE public.${table} OWNER TO ${admin}`);
    });
    try {
      const { name } = await connect(postgres, { username: admin, password: 'Admin-password-1' });
      await writeRole('database/roles/createrole', {
        db_name: name,
        creation_statements: [...postgres.createStatements, `GRANT SELECT ON public.${table} TO "{{name}}"`],
      });
      const creds = await readCreds('database/creds/createrole');
      expect(creds.status).toBe(200);
      expect(await postgres.loginWorks(creds.username, creds.password)).toBe(true);
      // The user really logs in and reads what it was granted.
      const asUser = new Client({ connectionString: `postgresql://${creds.username}:${creds.password}@127.0.0.1:5432/test` });
      await asUser.connect();
      try {
        expect((await asUser.query(`SELECT count(*)::int AS n FROM public.${table}`)).rows).toEqual([{ n: 0 }]);
      } finally {
        await asUser.end();
      }

      const revoked = await call('PUT', 'sys/leases/revoke', { lease_id: creds.leaseId });
      expect({ status: revoked.status, errors: revoked.body?.errors }).toEqual({ status: 204, errors: undefined });
      expect(await postgres.userExists(creds.username)).toBe(false);
      expect(await postgres.loginWorks(creds.username, creds.password)).toBe(false);
      expect((await lookup(creds.leaseId)).status).toBe(400);
    } finally {
      await withPostgres(async (client) => {
        await client.query(`DROP TABLE IF EXISTS public.${table}`);
        await client.query(`REVOKE CREATE ON SCHEMA public FROM ${admin}`);
      });
    }
  });

  test('password policies: generate follows the policy, and a connection naming it issues passwords under it', async () => {
    const policy = 'length = 12\nrule "charset" {\n  charset = "0123456789"\n  min-chars = 1\n}\n';
    expect((await call('POST', 'sys/policies/password/short', { policy })).status).toBe(204);
    for (let i = 0; i < 3; i++) {
      const generated = await call('GET', 'sys/policies/password/short/generate');
      expect(generated.status).toBe(200);
      expect(generated.body.data.password).toMatch(/^[0-9]{12}$/);
    }

    const { name, prefix } = await connect(mariadb, { password_policy: 'short' });
    await writeRole('database/roles/short-passwords', { db_name: name, creation_statements: mariadb.createStatements });
    const creds = await readCreds('database/creds/short-passwords');
    expect(creds.status).toBe(200);
    expect(creds.password).toMatch(/^[0-9]{12}$/);
    expect(await mariadb.loginWorks(creds.username, creds.password)).toBe(true);

    // Static roles on the connection rotate under the same policy.
    const user = `${prefix}_static`;
    await mariadb.createUser(user, 'Initial-password-1');
    await writeRole('database/static-roles/short-static', { db_name: name, username: user, rotation_period: '1h' });
    const staticPassword = (await call('GET', 'database/static-creds/short-static')).body.data.password as string;
    expect(staticPassword).toMatch(/^[0-9]{12}$/);
    expect(await mariadb.loginWorks(user, staticPassword)).toBe(true);

    // A connection naming a policy that does not exist cannot issue credentials.
    const { name: missing } = await connect(mariadb, { password_policy: 'no-such-policy' });
    await writeRole('database/roles/missing-policy', { db_name: missing, creation_statements: mariadb.createStatements });
    const refused = await readCreds('database/creds/missing-policy');
    expect(refused.status).toBe(400);
    expect(refused.errors).toEqual(['password policy "no-such-policy" does not exist']);
    expect((await call('DELETE', 'sys/policies/password/short')).status).toBe(204);
  });

  test('bad input is a 400 naming the problem', async () => {
    const unknownPlugin = await call('POST', 'database/config/unknown-plugin', { ...postgres.connection, plugin_name: 'nope-database-plugin' });
    expect(unknownPlugin.status).toBe(400);
    expect(unknownPlugin.body.errors[0]).toMatch(/unknown plugin "nope-database-plugin"/);

    const { name, prefix } = await connect(postgres, { allowed_roles: ['allowed-only'] });
    await writeRole('database/roles/not-allowed', { db_name: name, creation_statements: postgres.createStatements });
    const notAllowed = await readCreds('database/creds/not-allowed');
    expect(notAllowed.status).toBe(400);
    expect(notAllowed.errors).toEqual([`role "not-allowed" is not in the allowed_roles of connection "${name}"`]);

    const user = `${prefix}_static`;
    const staticRole = (fields: Record<string, unknown>) => call('POST', 'database/static-roles/allowed-only', { db_name: name, username: user, ...fields });
    for (const schedule of ['every day at noon', '61 * * * *']) {
      const badCron = await staticRole({ rotation_schedule: schedule });
      expect(badCron.status).toBe(400);
      expect(badCron.body.errors[0]).toMatch(/field "rotation_schedule"/);
    }
    const tooOften = await staticRole({ rotation_period: '2s' });
    expect(tooOften.status).toBe(400);
    expect(tooOften.body.errors).toEqual(['field "rotation_period": must be at least 5 seconds']);
    expect((await call('GET', 'database/static-roles/allowed-only')).status).toBe(404);
    expect(await postgres.usersStartingWith(prefix)).toEqual([]);
  });

  if (kind === 'distributed') {
    test('with the database service stopped, creds answer 503 naming the service at once', async () => {
      const { name } = await connect(postgres);
      await writeRole('database/roles/service-gone', { db_name: name, creation_statements: postgres.createStatements });
      await topology.stopProcess('database');
      const started = Date.now();
      const creds = await readCreds('database/creds/service-gone');
      expect(creds.status).toBe(503);
      expect(creds.errors[0]).toMatch(/^service "database" is unavailable/);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect((await call('GET', 'sys/mounts')).status).toBe(200);
    });
  }
});
