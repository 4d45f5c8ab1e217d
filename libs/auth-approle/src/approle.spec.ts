import { buildOpenApi, type AuthResponse } from '@svc/framework';
import { MountedBackend, refusal, validateOpenApi } from '@svc/testing';
import { approleBackendFactory } from './approle-backend';

describe('approle auth method', () => {
  let approle: MountedBackend;

  beforeEach(() => {
    approle = MountedBackend.create(approleBackendFactory, 'approle');
  });

  const roleId = async (name: string): Promise<string> => (await approle.read(`role/${name}/role-id`))!.role_id as string;
  const login = async (body: Record<string, unknown>, remoteAddress = '127.0.0.1'): Promise<AuthResponse> => {
    const response = await approle.request('update', 'login', body, { remoteAddress });
    return response!.auth!;
  };

  it('creates, reads, lists and deletes roles with every field; names are case-insensitive', async () => {
    await approle.write('role/Web', {
      bind_secret_id: true,
      secret_id_bound_cidrs: '10.0.0.0/8,127.0.0.1/32',
      secret_id_num_uses: 3,
      secret_id_ttl: '10m',
      local_secret_ids: true,
      token_ttl: '1h',
      token_max_ttl: '2h',
      token_policies: ['Web', 'db'],
      token_bound_cidrs: ['127.0.0.0/8'],
      token_explicit_max_ttl: '3h',
      token_no_default_policy: true,
      token_num_uses: 5,
      token_period: 0,
      token_type: 'service',
    });
    expect(await approle.read('role/web')).toEqual({
      bind_secret_id: true,
      secret_id_bound_cidrs: ['10.0.0.0/8', '127.0.0.1/32'],
      secret_id_num_uses: 3,
      secret_id_ttl: 600,
      local_secret_ids: true,
      token_ttl: 3600,
      token_max_ttl: 7200,
      token_policies: ['web', 'db'],
      policies: ['web', 'db'],
      token_bound_cidrs: ['127.0.0.0/8'],
      token_explicit_max_ttl: 10800,
      token_no_default_policy: true,
      token_num_uses: 5,
      token_period: 0,
      period: 0,
      token_type: 'service',
    });
    await approle.write('role/api', { policies: 'legacy', period: '30m' });
    expect(await approle.read('role/api')).toMatchObject({ token_policies: ['legacy'], token_period: 1800, bind_secret_id: true });
    expect(await approle.list('role/')).toEqual(['api', 'web']);
    await approle.request('delete', 'role/api');
    expect(await approle.read('role/api')).toBeUndefined();
    expect(await approle.list('role/')).toEqual(['web']);
  });

  it.each([
    [{ secret_id_num_uses: -1 }, /secret_id_num_uses/],
    [{ token_num_uses: -2 }, /token_num_uses/],
    [{ token_ttl: '2h', token_max_ttl: '1h' }, /token_ttl/],
    [{ secret_id_bound_cidrs: '10.0.0.0/33' }, /secret_id_bound_cidrs/],
    [{ token_bound_cidrs: 'not-an-address' }, /token_bound_cidrs/],
    [{ token_type: 'forever' }, /token_type/],
    [{ secret_id_ttl: 'soon' }, /secret_id_ttl/],
    [{ bind_secret_id: false }, /at least one constraint/],
    [{ token_type: 'batch', token_period: '1h' }, /token_type/],
  ])('refuses a bad role %j with a 400 naming the problem', async (body, problem) => {
    expect(await refusal(approle.write('role/bad', body))).toEqual({ status: 400, message: expect.stringMatching(problem) });
  });

  it('reads, sets and resets each field through its own path', async () => {
    await approle.write('role/r', {});
    const cases: [string, string, unknown, unknown][] = [
      ['policies', 'token_policies', 'a,b', ['a', 'b']],
      ['secret-id-num-uses', 'secret_id_num_uses', 7, 7],
      ['secret-id-ttl', 'secret_id_ttl', '1m', 60],
      ['token-ttl', 'token_ttl', '5m', 300],
      ['token-max-ttl', 'token_max_ttl', '10m', 600],
      ['token-num-uses', 'token_num_uses', 2, 2],
      ['token-bound-cidrs', 'token_bound_cidrs', '127.0.0.1', ['127.0.0.1']],
      ['secret-id-bound-cidrs', 'secret_id_bound_cidrs', '127.0.0.0/8', ['127.0.0.0/8']],
      ['period', 'token_period', '1h', 3600],
    ];
    for (const [path, field, sent, stored] of cases) {
      await approle.write(`role/r/${path}`, { [field]: sent });
      expect(await approle.read(`role/r/${path}`)).toMatchObject({ [field]: stored });
      await approle.request('delete', `role/r/${path}`);
      expect((await approle.read(`role/r/${path}`))![field]).toEqual(Array.isArray(stored) ? [] : 0);
    }
    expect(await approle.read('role/r/policies')).toEqual({ token_policies: [], policies: [] });
    expect(await approle.read('role/r/period')).toEqual({ token_period: 0, period: 0 });
    expect(await refusal(approle.write('role/r/bind-secret-id', { bind_secret_id: false }))).toEqual({ status: 400, message: expect.stringMatching(/at least one constraint/) });
    expect(await approle.read('role/r/local-secret-ids')).toEqual({ local_secret_ids: false });
    expect(await refusal(approle.write('role/r/local-secret-ids', { local_secret_ids: true }))).toMatchObject({ status: 405 });
    expect(await refusal(approle.write('role/r/token-ttl', {}))).toEqual({ status: 400, message: 'missing required field "token_ttl"' });
    expect(await refusal(approle.write('role/missing/token-ttl', { token_ttl: 5 }))).toEqual({ status: 400, message: 'role "missing" does not exist' });
  });

  it('reads the role ID, takes a custom one, and refuses one another role holds', async () => {
    await approle.write('role/a', {});
    await approle.write('role/b', { role_id: 'fixed-b' });
    expect(await roleId('a')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await roleId('b')).toBe('fixed-b');
    await approle.write('role/a/role-id', { role_id: 'custom-a' });
    expect(await roleId('a')).toBe('custom-a');
    expect(await refusal(approle.write('role/a/role-id', { role_id: 'fixed-b' }))).toEqual({ status: 400, message: expect.stringMatching(/role_id/) });
    expect(await refusal(approle.write('role/a/role-id', {}))).toEqual({ status: 400, message: 'missing required field "role_id"' });
  });

  it('generates secret IDs within the role\'s limits, lists their accessors, looks them up and destroys them', async () => {
    await approle.write('role/app', { secret_id_num_uses: 5, secret_id_ttl: '1h', secret_id_bound_cidrs: '10.0.0.0/8' });
    const generated = await approle.write('role/app/secret-id', { metadata: { team: 'blue' }, cidr_list: '10.1.0.0/16' });
    expect(generated).toEqual({ secret_id: expect.stringMatching(/^[0-9a-f-]{36}$/), secret_id_accessor: expect.any(String), secret_id_ttl: 3600, secret_id_num_uses: 5 });
    const custom = await approle.write('role/app/custom-secret-id', { secret_id: 'my-own-secret', num_uses: 2, ttl: '10m' });
    expect(custom).toMatchObject({ secret_id: 'my-own-secret', secret_id_num_uses: 2, secret_id_ttl: 600 });
    expect((await approle.list('role/app/secret-id/')).sort()).toEqual([generated.secret_id_accessor, custom.secret_id_accessor].sort());

    const looked = await approle.write('role/app/secret-id/lookup', { secret_id: generated.secret_id });
    expect(looked).toMatchObject({ secret_id_accessor: generated.secret_id_accessor, metadata: { team: 'blue' }, cidr_list: ['10.1.0.0/16'], secret_id_num_uses: 5 });
    expect(await approle.write('role/app/secret-id-accessor/lookup', { secret_id_accessor: custom.secret_id_accessor })).toMatchObject({ secret_id_num_uses: 2 });

    await approle.write('role/app/secret-id/destroy', { secret_id: generated.secret_id });
    expect(await approle.request('update', 'role/app/secret-id/lookup', { secret_id: generated.secret_id })).toBeUndefined();
    await approle.request('delete', 'role/app/secret-id-accessor/destroy', { secret_id_accessor: custom.secret_id_accessor });
    expect(await approle.list('role/app/secret-id/')).toEqual([]);
    expect(await refusal(approle.write('role/app/secret-id-accessor/lookup', { secret_id_accessor: custom.secret_id_accessor }))).toMatchObject({ status: 404 });
    expect(await refusal(approle.write('role/app/secret-id-accessor/destroy', { secret_id_accessor: 'nope' }))).toMatchObject({ status: 400 });
  });

  it.each([
    [{ num_uses: 6 }, /num_uses/],
    [{ num_uses: 0 }, /num_uses/],
    [{ num_uses: -1 }, /num_uses/],
    [{ ttl: '2h' }, /ttl/],
    [{ cidr_list: '192.168.0.0/16' }, /cidr_list.*not within/],
    [{ cidr_list: '10.0.0.0/4' }, /cidr_list/],
    [{ token_bound_cidrs: 'nonsense' }, /token_bound_cidrs/],
    [{ metadata: { nested: { no: 1 } } }, /metadata/],
  ])('refuses a secret ID %j outside the role with a 400 naming the field', async (body, problem) => {
    await approle.write('role/app', { secret_id_num_uses: 5, secret_id_ttl: '1h', secret_id_bound_cidrs: '10.0.0.0/8' });
    expect(await refusal(approle.write('role/app/secret-id', body))).toEqual({ status: 400, message: expect.stringMatching(problem) });
  });

  it('logs in: the auth carries the role\'s token settings, metadata, alias and what renewal needs; stores no secret ID in clear', async () => {
    await approle.write('role/app', { token_policies: 'app', token_ttl: '20m', token_max_ttl: '1h', token_num_uses: 3 });
    const id = await roleId('app');
    const { secret_id: secretId } = await approle.write('role/app/secret-id', { metadata: { team: 'blue' }, token_bound_cidrs: '127.0.0.1/32' });
    const auth = await login({ role_id: id, secret_id: secretId });
    expect(auth).toMatchObject({
      policies: ['app'],
      ttl: 1200,
      maxTtl: 3600,
      numUses: 3,
      renewable: true,
      displayName: 'app',
      metadata: { role_name: 'app', team: 'blue' },
      alias: { name: id },
      internalData: { role_name: 'app', role_id: id },
      boundCidrs: ['127.0.0.1/32'],
    });
    const stored = await approle.storage.list('secret-id/app/');
    expect(stored).toHaveLength(1);
    expect(stored[0]).not.toContain(secretId);
    expect(JSON.stringify(await approle.storage.getJSON(`secret-id/app/${stored[0]}`))).not.toContain(secretId);
  });

  it('refuses logins: unknown role ID, wrong or missing secret ID, spent uses, disallowed address', async () => {
    await approle.write('role/app', { secret_id_bound_cidrs: '127.0.0.0/8' });
    const id = await roleId('app');
    const { secret_id: once } = await approle.write('role/app/secret-id', { num_uses: 1, cidr_list: '127.0.0.1/32' });
    expect(await refusal(login({ role_id: 'nope', secret_id: once }))).toEqual({ status: 400, message: 'invalid role or secret ID' });
    expect(await refusal(login({ role_id: id, secret_id: 'wrong' }))).toEqual({ status: 400, message: 'invalid role or secret ID' });
    expect(await refusal(login({ role_id: id }))).toEqual({ status: 400, message: 'missing required field "secret_id"' });
    expect(await refusal(login({ secret_id: once }))).toEqual({ status: 400, message: 'missing required field "role_id"' });
    expect(await refusal(login({ role_id: id, secret_id: once }, '10.0.0.1'))).toEqual({ status: 403, message: expect.stringMatching(/role's CIDR blocks/) });
    expect(await refusal(login({ role_id: id, secret_id: once }, '127.0.0.2'))).toEqual({ status: 403, message: expect.stringMatching(/secret ID's CIDR blocks/) });
    await login({ role_id: id, secret_id: once }, '::ffff:127.0.0.1');
    expect(await refusal(login({ role_id: id, secret_id: once }))).toEqual({ status: 400, message: 'invalid role or secret ID' });
  });

  it('spends a secret ID\'s last use once, however many logins race for it', async () => {
    await approle.write('role/app', {});
    const id = await roleId('app');
    const { secret_id: secretId } = await approle.write('role/app/secret-id', { num_uses: 2 });
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => login({ role_id: id, secret_id: secretId })));
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(2);
  });

  it('logs in without a secret ID when the role binds addresses instead', async () => {
    await approle.write('role/open', { bind_secret_id: false, token_bound_cidrs: '127.0.0.0/8' });
    expect(await login({ role_id: await roleId('open') })).toMatchObject({ boundCidrs: ['127.0.0.0/8'] });
    expect(await refusal(approle.write('role/open/secret-id', {}))).toEqual({ status: 400, message: expect.stringMatching(/bind_secret_id/) });
  });

  it('renews while the role exists with the same role ID, with the role\'s current settings', async () => {
    await approle.write('role/app', { token_policies: 'app', token_ttl: '20m' });
    const id = await roleId('app');
    const auth = await login({ role_id: id, secret_id: (await approle.write('role/app/secret-id')).secret_id });
    await approle.write('role/app', { token_policies: 'app,extra', token_ttl: '30m' });
    expect(await approle.renewAuth(auth)).toMatchObject({ policies: ['app', 'extra'], ttl: 1800 });
    await approle.write('role/app/role-id', { role_id: 'moved' });
    expect(await refusal(approle.renewAuth(auth))).toEqual({ status: 400, message: expect.stringMatching(/role ID of role "app" changed/) });
    await approle.request('delete', 'role/app');
    expect(await refusal(approle.renewAuth(auth))).toEqual({ status: 400, message: expect.stringMatching(/no longer exists/) });
  });

  it('tidy (on request and periodic) removes expired secret IDs and their accessors; deleting a role removes its secret IDs', async () => {
    await approle.write('role/app', {});
    const first = await approle.write('role/app/secret-id', { ttl: '1h' });
    const second = await approle.write('role/app/secret-id', { ttl: '1h' });
    const lasting = await approle.write('role/app/secret-id', {});
    // Expiry is a stored time: moving it into the past stands for the hour passing.
    const expire = async (accessor: string) => {
      for (const key of await approle.storage.list('secret-id/app/')) {
        const entry = await approle.storage.getJSON<{ secret_id_accessor: string }>(`secret-id/app/${key}`);
        if (entry?.secret_id_accessor === accessor) await approle.storage.putJSON(`secret-id/app/${key}`, { ...entry, expiration_time: '2000-01-01T00:00:00Z' });
      }
    };
    await expire(first.secret_id_accessor);
    expect(await refusal(login({ role_id: await roleId('app'), secret_id: first.secret_id }))).toEqual({ status: 400, message: 'invalid role or secret ID' });
    await approle.storage.putJSON('accessor/dangling', { role: 'app', hmac: 'gone' });
    expect(await approle.write('tidy/secret-id')).toEqual({ secret_ids_removed: 1, accessors_removed: 1 });
    expect((await approle.list('role/app/secret-id/')).sort()).toEqual([second.secret_id_accessor, lasting.secret_id_accessor].sort());
    await expire(second.secret_id_accessor);
    await approle.periodic();
    expect(await approle.list('role/app/secret-id/')).toEqual([lasting.secret_id_accessor]);

    await approle.request('delete', 'role/app');
    expect(await approle.storage.list('secret-id/')).toEqual([]);
    expect(await approle.storage.list('accessor/')).toEqual([]);
  });

  it('describes every path in help and a valid OpenAPI document', async () => {
    const document = buildOpenApi([{ prefix: '/auth/approle/', backend: approle.backend }], { title: 'approle', version: '1' });
    expect(await validateOpenApi(document)).toEqual({ valid: true });
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/auth/approle/login', '/auth/approle/role/{role_name}', '/auth/approle/role/{role_name}/secret-id/', '/auth/approle/tidy/secret-id']));
    expect(approle.backend.help('').help).toMatch(/approle auth method/);
  });
});
