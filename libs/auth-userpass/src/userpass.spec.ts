import { buildOpenApi, type AuthResponse } from '@svc/framework';
import { MountedBackend, refusal, SAMPLE_PASSWORD_POLICY, validateOpenApi } from '@svc/testing';
import { userpassBackendFactory } from './userpass-backend';

describe('userpass auth method', () => {
  let userpass: MountedBackend;

  beforeEach(() => {
    userpass = MountedBackend.create(userpassBackendFactory, 'userpass', { context: { passwordPolicies: { strong: SAMPLE_PASSWORD_POLICY } } });
  });

  const login = async (username: string, password: string, remoteAddress = '127.0.0.1'): Promise<AuthResponse> =>
    (await userpass.request('update', `login/${username}`, { password }, { remoteAddress }))!.auth!;

  it('creates, reads (never the password), lists and deletes users; usernames are case-insensitive', async () => {
    await userpass.write('users/Alice', { password: 'wonderland', token_policies: 'Reader', token_ttl: '1h', token_bound_cidrs: '127.0.0.0/8' });
    const read = await userpass.read('users/alice');
    expect(read).toEqual({
      password_policy: '',
      token_policies: ['reader'],
      policies: ['reader'],
      token_ttl: 3600,
      token_max_ttl: 0,
      token_explicit_max_ttl: 0,
      token_period: 0,
      period: 0,
      token_num_uses: 0,
      token_no_default_policy: false,
      token_bound_cidrs: ['127.0.0.0/8'],
      token_type: 'default',
    });
    expect(JSON.stringify(await userpass.storage.getJSON('user/alice'))).not.toContain('wonderland');
    await userpass.write('users/bob', { password: 'builder' });
    expect(await userpass.list('users/')).toEqual(['alice', 'bob']);
    await userpass.write('users/ALICE', { token_max_ttl: '2h' });
    expect(await userpass.read('users/alice')).toMatchObject({ token_ttl: 3600, token_max_ttl: 7200 });
    expect(await login('alice', 'wonderland')).toBeDefined();
    await userpass.request('delete', 'users/bob');
    expect(await userpass.read('users/bob')).toBeUndefined();
    expect(await userpass.list('users/')).toEqual(['alice']);
  });

  it.each([
    [{}, /missing required field "password"/],
    [{ password: '' }, /password/],
    [{ password: 'x', token_num_uses: -1 }, /token_num_uses/],
    [{ password: 'x', token_bound_cidrs: '300.0.0.1' }, /token_bound_cidrs/],
    [{ password: 'x', token_ttl: 'later' }, /token_ttl/],
    [{ password: 'x', password_policy: 'missing' }, /password_policy.*"missing" does not exist/],
  ])('refuses a bad user %j with a 400 naming the problem', async (body, problem) => {
    expect(await refusal(userpass.write('users/carol', body))).toEqual({ status: 400, message: expect.stringMatching(problem) });
  });

  it('holds passwords to the user\'s password policy, without quoting them', async () => {
    expect(await refusal(userpass.write('users/dave', { password: 'short1', password_policy: 'strong' }))).toEqual({
      status: 400,
      message: 'field "password" does not satisfy the password policy "strong": it must be at least 12 characters long',
    });
    const noDigits = await refusal(userpass.write('users/dave', { password: 'onlylettersxx1', password_policy: 'strong' }));
    expect(noDigits.message).toMatch(/at least 2 of the characters "0123456789"/);
    expect(noDigits.message).not.toContain('onlylettersxx1');
    await userpass.write('users/dave', { password: 'letters12345', password_policy: 'strong' });
    expect(await refusal(userpass.write('users/dave/password', { password: 'Capital12345' }))).toMatchObject({ status: 400, message: expect.stringMatching(/no rule/) });
    await userpass.write('users/dave/password', { password: 'another67890' });
    expect(await login('dave', 'another67890')).toBeDefined();
  });

  it('changes passwords and policies through their own paths', async () => {
    await userpass.write('users/erin', { password: 'first' });
    await userpass.write('users/erin/password', { password: 'second' });
    expect(await refusal(login('erin', 'first'))).toEqual({ status: 400, message: 'invalid username or password' });
    expect(await login('erin', 'second')).toBeDefined();
    await userpass.write('users/erin/policies', { policies: 'ops,audit' });
    expect(await userpass.read('users/erin')).toMatchObject({ token_policies: ['ops', 'audit'] });
    expect(await refusal(userpass.write('users/erin/policies', {}))).toEqual({ status: 400, message: 'missing required field "token_policies"' });
    expect(await refusal(userpass.write('users/erin/password', {}))).toEqual({ status: 400, message: 'missing required field "password"' });
    expect(await refusal(userpass.write('users/nobody/password', { password: 'x' }))).toEqual({ status: 400, message: 'user "nobody" does not exist' });
  });

  it('logs in with the user\'s token settings; a wrong password and an unknown user get the same answer', async () => {
    await userpass.write('users/frank', { password: 'hunter2', token_policies: 'dev', token_ttl: '10m', token_num_uses: 4, token_no_default_policy: true });
    expect(await login('Frank', 'hunter2')).toMatchObject({
      policies: ['dev'],
      noDefaultPolicy: true,
      ttl: 600,
      numUses: 4,
      renewable: true,
      displayName: 'frank',
      metadata: { username: 'frank' },
      alias: { name: 'frank' },
      internalData: { username: 'frank' },
    });
    const wrong = await refusal(login('frank', 'hunter3'));
    const unknown = await refusal(login('nobody', 'hunter2'));
    expect(wrong).toEqual({ status: 400, message: 'invalid username or password' });
    expect(unknown).toEqual(wrong);
    expect(await refusal(userpass.request('update', 'login/frank', {}))).toEqual({ status: 400, message: 'missing required field "password"' });
  });

  it('refuses a login from outside the user\'s token_bound_cidrs', async () => {
    await userpass.write('users/gina', { password: 'pw', token_bound_cidrs: '10.0.0.0/8' });
    expect(await refusal(login('gina', 'pw', '192.168.1.1'))).toEqual({ status: 403, message: expect.stringMatching(/token_bound_cidrs/) });
    expect(await login('gina', 'pw', '10.1.2.3')).toMatchObject({ boundCidrs: ['10.0.0.0/8'] });
  });

  it('renews with the user\'s current policies and TTL, and refuses once the user is gone', async () => {
    await userpass.write('users/hank', { password: 'pw', token_policies: 'one', token_ttl: '5m' });
    const auth = await login('hank', 'pw');
    await userpass.write('users/hank', { token_policies: 'one,two', token_ttl: '15m' });
    expect(await userpass.renewAuth(auth)).toMatchObject({ policies: ['one', 'two'], ttl: 900, internalData: { username: 'hank' } });
    await userpass.request('delete', 'users/hank');
    expect(await refusal(userpass.renewAuth(auth))).toEqual({ status: 400, message: 'user "hank" no longer exists; the token cannot be renewed' });
  });

  it('describes every path in help and a valid OpenAPI document', async () => {
    const document = buildOpenApi([{ prefix: '/auth/userpass/', backend: userpass.backend }], { title: 'userpass', version: '1' });
    expect(await validateOpenApi(document)).toEqual({ valid: true });
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/auth/userpass/login/{username}', '/auth/userpass/users/', '/auth/userpass/users/{username}/password']));
    expect(userpass.backend.help('').help).toMatch(/userpass auth method/);
  });
});
