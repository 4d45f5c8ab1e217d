import { mysqlLoginWorks, mysqlUserExists, withMysql } from '@svc/testing';
import { DatabaseHarness, MYSQL_URL, unique } from './testing/harness';

const CREATE = [`CREATE USER '{{name}}'@'%' IDENTIFIED BY '{{password}}'`, `GRANT SELECT ON mysql.db TO '{{name}}'@'%'`];

describe('mysql-database-plugin (MariaDB)', () => {
  let harness: DatabaseHarness;
  const users: string[] = [];

  beforeEach(async () => {
    harness = new DatabaseHarness();
    const written = await harness.call('update', 'config/maria', { plugin_name: 'mysql-database-plugin', connection_url: MYSQL_URL, username: 'root', allowed_roles: ['*'] });
    expect(written.status).toBe(204);
  });

  afterEach(async () => {
    await harness.backend.cleanup();
    await withMysql(async (query) => {
      for (const user of users.splice(0)) await query('DROP USER IF EXISTS ?@?', [user, '%']);
    });
  });

  async function createUser(password: string): Promise<string> {
    const user = unique('svc');
    users.push(user);
    await withMysql((query) => query('CREATE USER ?@? IDENTIFIED BY ?', [user, '%', password]));
    return user;
  }

  it('issues users that log in, and cannot once revoked', async () => {
    await harness.call('update', 'roles/reader', { db_name: 'maria', creation_statements: CREATE, default_ttl: 300 });
    const creds = await harness.call('read', 'creds/reader');
    expect(creds.status).toBe(200);
    const { username, password } = creds.data as { username: string; password: string };
    users.push(username);
    expect(username.length).toBeLessThanOrEqual(32);
    expect(username).toMatch(/^v-token-reader-/);
    expect(await mysqlLoginWorks(username, password)).toBe(true);
    expect(await mysqlLoginWorks(username, `${password}x`)).toBe(false);

    // Renewal has nothing to do in MySQL without renew statements, and succeeds.
    expect((await harness.renew(creds.secret!.internalData)).secret).toMatchObject({ ttl: 300 });

    expect((await harness.revoke(creds.secret!.internalData)).status).toBe(204);
    expect(await mysqlLoginWorks(username, password)).toBe(false);
    expect(await mysqlUserExists(username)).toBe(false);
  });

  it('a failed creation is rolled back: no user is left behind', async () => {
    await harness.call('update', 'roles/broken', { db_name: 'maria', creation_statements: [`CREATE USER '{{name}}'@'%' IDENTIFIED BY '{{password}}'`, 'SELEKT nothing'] });
    const creds = await harness.call('read', 'creds/broken');
    expect(creds.status).toBe(502);
    expect(creds.errors![0]).toMatch(/^create user failed: .*SQL syntax/);
    const leftovers = await withMysql((query) => query(`SELECT User FROM mysql.user WHERE User LIKE 'v-token-broken-%'`));
    expect(leftovers).toEqual([]);
  });

  it('runs the role\'s rollback statements when creation fails', async () => {
    const marker = unique('rb');
    users.push(marker);
    await harness.call('update', 'roles/rolledback', {
      db_name: 'maria',
      creation_statements: [`CREATE USER '{{name}}'@'%' IDENTIFIED BY '{{password}}'`, 'SELEKT 1'],
      rollback_statements: [`DROP USER '{{name}}'@'%'`, `CREATE USER '${marker}'@'%'`],
    });
    expect((await harness.call('read', 'creds/rolledback')).status).toBe(502);
    expect(await mysqlUserExists(marker)).toBe(true);
    const leftovers = await withMysql((query) => query(`SELECT User FROM mysql.user WHERE User LIKE 'v-token-rolledba%'`));
    expect(leftovers).toEqual([]);
  });

  it('a wrong root password fails the write with the database message, scrubbed', async () => {
    const root = await createUser('right-password');
    const written = await harness.call('update', 'config/wrong', { plugin_name: 'mysql-database-plugin', connection_url: MYSQL_URL, username: root, password: 'wrong-password-123' });
    expect(written.status).toBe(502);
    expect(written.errors![0]).toMatch(/^verify connection failed: Access denied for user/);
    expect(written.errors![0]).not.toContain('wrong-password-123');
    expect((await harness.call('read', 'config/wrong')).status).toBe(204);
  });

  it('a root user that disappears mid-use gives 502', async () => {
    const root = await createUser('root-pw-1');
    await withMysql((query) => query('GRANT ALL PRIVILEGES ON *.* TO ?@? WITH GRANT OPTION', [root, '%']));
    await harness.call('update', 'config/fragile', { plugin_name: 'mysql-database-plugin', connection_url: `mysql://{{username}}:{{password}}@127.0.0.1:3306/`, username: root, password: 'root-pw-1', allowed_roles: 'r', max_open_connections: 1 });
    await harness.call('update', 'roles/r', { db_name: 'fragile', creation_statements: CREATE });
    await withMysql((query) => query('DROP USER ?@?', [root, '%']));
    await harness.call('update', 'reset/fragile').then((reset) => expect(reset.status).toBe(502));
    const creds = await harness.call('read', 'creds/r');
    expect(creds.status).toBe(502);
    expect(creds.errors![0]).toMatch(/^create user failed: Access denied for user/);
    expect(creds.errors![0]).not.toContain('root-pw-1');
  });

  it('rotate-root changes the root password: the old one stops working', async () => {
    const root = await createUser('first-root-pw');
    await withMysql((query) => query('GRANT ALL PRIVILEGES ON *.* TO ?@? WITH GRANT OPTION', [root, '%']));
    await harness.call('update', 'config/rooted', { plugin_name: 'mysql-database-plugin', connection_url: MYSQL_URL, username: root, password: 'first-root-pw', allowed_roles: '*' });
    expect((await harness.call('update', 'rotate-root/rooted')).status).toBe(204);
    expect(await mysqlLoginWorks(root, 'first-root-pw')).toBe(false);
    await harness.call('update', 'roles/via-rotated', { db_name: 'rooted', creation_statements: CREATE });
    const creds = await harness.call('read', 'creds/via-rotated');
    expect(creds.status).toBe(200);
    users.push((creds.data as { username: string }).username);
    await harness.revoke(creds.secret!.internalData);
  });

  it('static roles: rotation changes the password, the old one fails and the new one works', async () => {
    const user = await createUser('static-initial');
    expect((await harness.call('update', 'static-roles/svc-static', { db_name: 'maria', username: user, rotation_period: 3600 })).status).toBe(204);
    expect(await mysqlLoginWorks(user, 'static-initial')).toBe(false);
    const first = ((await harness.call('read', 'static-creds/svc-static')).data as { password: string }).password;
    expect(await mysqlLoginWorks(user, first)).toBe(true);

    await harness.call('update', 'rotate-role/svc-static');
    const second = ((await harness.call('read', 'static-creds/svc-static')).data as { password: string }).password;
    expect(await mysqlLoginWorks(user, first)).toBe(false);
    expect(await mysqlLoginWorks(user, second)).toBe(true);
  });

  it('a failed rotation keeps the old password working and is reported', async () => {
    const user = await createUser('x');
    await harness.call('update', 'static-roles/failing', { db_name: 'maria', username: user, rotation_period: 3600 });
    const before = ((await harness.call('read', 'static-creds/failing')).data as { password: string }).password;
    await harness.call('update', 'static-roles/failing', { rotation_statements: ['ALTER USER nobody_here IDENTIFIED BY "{{password}}"'] });
    const failed = await harness.call('update', 'rotate-role/failing');
    expect(failed.status).toBe(502);
    expect(failed.errors![0]).toMatch(/^rotate static role credentials failed: /);
    expect(((await harness.call('read', 'static-creds/failing')).data as { password: string }).password).toBe(before);
    expect(await mysqlLoginWorks(user, before)).toBe(true);
  });
});
