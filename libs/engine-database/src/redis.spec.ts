import { DatabaseHarness, redisLoginWorks, unique, withRedis } from './testing/harness';

describe('redis-database-plugin (ACL users)', () => {
  let harness: DatabaseHarness;
  const users: string[] = [];

  beforeEach(async () => {
    harness = new DatabaseHarness();
    const written = await harness.call('update', 'config/cache', { plugin_name: 'redis-database-plugin', host: '127.0.0.1', port: 6379, allowed_roles: '*' });
    expect(written.status).toBe(204);
  });

  afterEach(async () => {
    await harness.backend.cleanup();
    await withRedis(async (redis) => {
      for (const user of users.splice(0)) await redis.call('ACL', 'DELUSER', user);
    });
  });

  it('issues ACL users that AUTH, and cannot once revoked', async () => {
    const written = await harness.call('update', 'roles/cache-reader', { db_name: 'cache', creation_statements: '["~svc-db-test:*", "+get"]', default_ttl: 60 });
    expect(written.status).toBe(204);
    const creds = await harness.call('read', 'creds/cache-reader');
    expect(creds.status).toBe(200);
    const { username, password } = creds.data as { username: string; password: string };
    users.push(username);
    expect(username).toMatch(/^V_TOKEN_CACHE-READ_[A-Z0-9]{20}_\d+$/);
    expect(await redisLoginWorks(username, password)).toBe(true);
    const rules = await withRedis((redis) => redis.call('ACL', 'GETUSER', username));
    expect(JSON.stringify(rules)).toContain('~svc-db-test:*');

    expect((await harness.revoke(creds.secret!.internalData)).status).toBe(204);
    expect(await redisLoginWorks(username, password)).toBe(false);
  });

  it('refuses credential types Redis cannot hold, and malformed rules', async () => {
    const keyed = await harness.call('update', 'roles/keyed', { db_name: 'cache', credential_type: 'rsa_private_key', creation_statements: '["~*"]' });
    expect(keyed).toMatchObject({ status: 400, errors: ['field "credential_type": redis-database-plugin does not support rsa_private_key'] });
    await harness.call('update', 'roles/badjson', { db_name: 'cache', creation_statements: '["~*"' });
    const creds = await harness.call('read', 'creds/badjson');
    expect(creds).toMatchObject({ status: 400, errors: ['field "creation_statements": a Redis statement starting with "[" must be a JSON array of ACL rules'] });
    await harness.call('update', 'roles/badrule', { db_name: 'cache', creation_statements: '["+nosuchcommand"]' });
    const refused = await harness.call('read', 'creds/badrule');
    expect(refused.status).toBe(502);
    expect(refused.errors![0]).toMatch(/^create user failed: .*nosuchcommand/i);
  });

  it('static roles rotate an ACL user\'s password', async () => {
    const user = unique('svc-static');
    users.push(user);
    await withRedis((redis) => redis.call('ACL', 'SETUSER', user, 'on', '>initial-pw', '+ping'));
    expect((await harness.call('update', 'static-roles/cache-static', { db_name: 'cache', username: user, rotation_period: '1h' })).status).toBe(204);
    const { password } = (await harness.call('read', 'static-creds/cache-static')).data as { password: string };
    expect(await redisLoginWorks(user, 'initial-pw')).toBe(false);
    expect(await redisLoginWorks(user, password)).toBe(true);
  });

  it('a Redis that is down gives 502', async () => {
    const down = await harness.call('update', 'config/down', { plugin_name: 'redis-database-plugin', host: '127.0.0.1', port: 1, password: 'redis-secret' });
    expect(down.status).toBe(502);
    expect(down.errors![0]).toMatch(/^verify connection failed: .*ECONNREFUSED/);
    expect(down.errors![0]).not.toContain('redis-secret');
  });
});
