import { randomUUID } from 'node:crypto';
import { RedisLockManager } from '@svc/locks';
import { InmemPhysical, Keyring } from '@svc/storage';
import { eventually, mountStorage, mysqlLoginWorks, withMysql, withPostgres } from '@svc/testing';
import { DatabaseHarness, databaseMount, MYSQL_URL, POSTGRES_URL, unique } from './testing/harness';

describe('static roles', () => {
  describe('input checks', () => {
    let harness: DatabaseHarness;
    const user = unique('svc_check');

    beforeAll(async () => {
      await withPostgres((client) => client.query(`CREATE ROLE "${user}" LOGIN`));
    });
    afterAll(async () => {
      await withPostgres((client) => client.query(`DROP ROLE IF EXISTS "${user}"`));
    });
    beforeEach(async () => {
      harness = new DatabaseHarness();
      await harness.call('update', 'config/pg', { plugin_name: 'postgresql-database-plugin', connection_url: POSTGRES_URL, username: 'postgres', allowed_roles: 'checked,scheduled' });
    });
    afterEach(() => harness.backend.cleanup());

    it.each([
      [{ rotation_period: 4 }, 'field "rotation_period": must be at least 5 seconds'],
      [{}, 'exactly one of "rotation_period" and "rotation_schedule" must be set'],
      [{ rotation_period: 60, rotation_schedule: '0 * * * *' }, 'exactly one of "rotation_period" and "rotation_schedule" must be set'],
      [{ rotation_schedule: '0 * * *' }, 'field "rotation_schedule": must be a cron expression with five fields: minute, hour, day of month, month, day of week'],
      [{ rotation_schedule: '61 * * * *' }, 'field "rotation_schedule": invalid cron expression: Constraint error, got value 61 expected range 0-59'],
      [{ rotation_period: 60, rotation_window: '2h' }, 'field "rotation_window": applies only with "rotation_schedule", not with "rotation_period"'],
      [{ rotation_schedule: '0 * * * *', rotation_window: '30m' }, 'field "rotation_window": must be at least 3600 seconds (1 hour)'],
      [{ rotation_period: 'often' }, 'field "rotation_period": "often" is not a valid duration'],
    ])('refuses %j', async (schedule, message) => {
      const outcome = await harness.call('update', 'static-roles/checked', { db_name: 'pg', username: user, ...schedule });
      expect(outcome.status).toBe(400);
      expect(outcome.errors).toEqual([message]);
      expect((await harness.call('read', 'static-roles/checked')).status).toBe(204);
    });

    it('refuses roles outside allowed_roles, unknown connections and missing fields', async () => {
      expect((await harness.call('update', 'static-roles/outsider', { db_name: 'pg', username: user, rotation_period: 60 })).errors).toEqual([
        'role "outsider" is not in the allowed_roles of connection "pg"',
      ]);
      expect((await harness.call('update', 'static-roles/checked', { db_name: 'nope', username: user, rotation_period: 60 })).errors).toEqual([
        'unknown database connection "nope"',
      ]);
      expect((await harness.call('update', 'static-roles/checked', { db_name: 'pg', rotation_period: 60 })).errors).toEqual(['missing required field "username"']);
    });

    it('a schedule with a window is kept and reported by static-creds', async () => {
      const created = await harness.call('update', 'static-roles/scheduled', { db_name: 'pg', username: user, rotation_schedule: '0 0 1 1 *', rotation_window: '2h' });
      expect(created.status).toBe(204);
      const creds = (await harness.call('read', 'static-creds/scheduled')).data!;
      expect(creds).toMatchObject({ username: user, rotation_schedule: '0 0 1 1 *', rotation_window: 7200 });
      expect(creds).not.toHaveProperty('rotation_period');
      const nextJanuary = Date.UTC(new Date().getUTCFullYear() + 1, 0, 1);
      expect(Math.abs((creds.ttl as number) - (nextJanuary - Date.now()) / 1000)).toBeLessThan(5);

      // Switching to a period drops the schedule; username cannot change.
      await harness.call('update', 'static-roles/scheduled', { rotation_period: '10m' });
      expect((await harness.call('read', 'static-roles/scheduled')).data).toMatchObject({ rotation_period: 600 });
      expect((await harness.call('read', 'static-roles/scheduled')).data).not.toHaveProperty('rotation_schedule');
      expect((await harness.call('update', 'static-roles/scheduled', { username: 'someone-else' })).errors).toEqual([
        'field "username": cannot be changed on an existing static role',
      ]);
      expect((await harness.call('list', 'static-roles/')).data).toEqual({ keys: ['scheduled'] });
    });
  });

  describe('scheduled rotation across two replicas', () => {
    const user = unique('svc_rot');
    const lockPrefix = `svc-db-test:${randomUUID()}:`;
    let locks: RedisLockManager[] = [];
    let replicas: DatabaseHarness[] = [];

    beforeAll(() => {
      const physical = new InmemPhysical();
      const keyring = Keyring.generate();
      const mount = databaseMount();
      locks = [0, 1].map(() => new RedisLockManager({ address: '127.0.0.1:6379', keyPrefix: lockPrefix }));
      // Each replica has its own barrier and view over the shared storage, and its own lock client.
      replicas = locks.map((lockManager) => new DatabaseHarness(mount, mountStorage(mount, physical, keyring), { locks: lockManager }));
    });
    beforeAll(async () => {
      await withMysql((query) => query('CREATE USER ?@? IDENTIFIED BY ?', [user, '%', 'initial']));
    });
    afterAll(async () => {
      await Promise.all(replicas.map((replica) => replica.backend.cleanup()));
      await Promise.all(locks.map((lockManager) => lockManager.close()));
      await withMysql((query) => query('DROP USER IF EXISTS ?@?', [user, '%']));
    });

    it('rotates every period, on exactly one replica per due time', async () => {
      const [a, b] = replicas;
      await a.call('update', 'config/maria', { plugin_name: 'mysql-database-plugin', connection_url: MYSQL_URL, username: 'root', allowed_roles: '*' });
      expect((await a.call('update', 'static-roles/fast', { db_name: 'maria', username: user, rotation_period: 5 })).status).toBe(204);
      const initial = ((await b.call('read', 'static-creds/fast')).data as { password: string }).password;
      const rotations = () => a.rotationsLogged('fast') + b.rotationsLogged('fast');

      // Both replicas run their timers and, meanwhile, the core's periodic call, all at once.
      await eventually(async () => {
        await Promise.all([a.periodic(), b.periodic()]);
        return rotations() >= 3;
      }, 30_000);

      const times = [...a.logs, ...b.logs]
        .filter((line) => line.msg === 'rotated static role credentials')
        .map((line) => line.time as number)
        .sort((x, y) => x - y);
      for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(4_000);

      const current = ((await b.call('read', 'static-creds/fast')).data as { password: string; last_service_rotation: string }).password;
      expect(current).not.toBe(initial);
      expect(await mysqlLoginWorks(user, initial)).toBe(false);
      expect(await mysqlLoginWorks(user, current)).toBe(true);
    }, 40_000);
  });
});
