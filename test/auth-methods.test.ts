/**
 * Logging in: the approle and userpass auth methods mounted under sys/auth, in both topologies. In
 * the distributed one every login goes through one gateway and the token is used through the other,
 * since auth methods run in the gateways over shared storage.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { AuthBlock } from '@svc/api-contract';
import { api, eventually, initAndUnseal, startTopology, type Topology, type TopologyKind } from '@svc/testing';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Data = Record<string, any>;
interface Reply {
  data: Data;
  errors: string[];
  auth: AuthBlock;
  wrap_info: { token: string; accessor: string; wrapped_accessor: string };
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('auth methods, %s', (kind) => {
  let topology: Topology;
  /** Logins go to `loginUrl`, the tokens are used at `useUrl` (another gateway when there is one). */
  let loginUrl: string;
  let useUrl: string;
  let root: string;
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-auth-methods-'));

  const call = (url: string, method: string, where: string, token?: string, body?: unknown, headers?: Record<string, string>) =>
    api<Reply>(url, method, `/v1/${where}`, { token, body, headers });
  /** A request that must succeed (200, or 204 without a body); returns the reply. */
  const ok = async (url: string, method: string, where: string, token?: string, body?: unknown): Promise<Reply> => {
    const res = await call(url, method, where, token, body);
    expect([res.status, where, res.text]).toEqual([res.status === 204 ? 204 : 200, where, expect.any(String)]);
    return res.body;
  };
  const admin = (method: string, where: string, body?: unknown) => ok(loginUrl, method, where, root, body);
  const refused = async (url: string, method: string, where: string, token: string | undefined, body: unknown, status: number, problem: RegExp) => {
    const res = await call(url, method, where, token, body);
    expect([res.status, res.body?.errors?.join('; ')]).toEqual([status, expect.stringMatching(problem)]);
  };
  const lookupSelf = async (token: string) => (await ok(useUrl, 'GET', 'auth/token/lookup-self', token)).data;

  beforeAll(async () => {
    topology = await startTopology(kind, { gateways: 2 });
    loginUrl = topology.urls[0];
    useUrl = topology.urls[topology.urls.length - 1];
    ({ rootToken: root } = await initAndUnseal(loginUrl));
    await admin('POST', 'sys/mounts/kv', { type: 'kv' });
    await admin('PUT', 'kv/shared', { value: 'for readers' });
    await admin('PUT', 'sys/policies/acl/reader', { policy: 'path "kv/*" { capabilities = ["read"] }' });
    await admin('PUT', 'sys/policies/acl/writer', { policy: 'path "kv/*" { capabilities = ["create", "update", "read"] }' });
    await admin('POST', 'sys/auth/approle', { type: 'approle' });
    await admin('POST', 'sys/auth/userpass', { type: 'userpass', description: 'people' });
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('both methods are listed under sys/auth; an unknown type is refused', async () => {
    const listed = await admin('GET', 'sys/auth');
    expect(listed.data).toMatchObject({ 'approle/': { type: 'approle' }, 'userpass/': { type: 'userpass', description: 'people' }, 'token/': { type: 'token' } });
    await refused(loginUrl, 'POST', 'sys/auth/other', root, { type: 'kerberos' }, 400, /unknown auth method type "kerberos"; known types: approle, aws, cloud, jwt, kubernetes, oidc, userpass$/);
    await refused(loginUrl, 'POST', 'sys/mounts/approle-as-secrets', root, { type: 'approle' }, 400, /unknown secrets engine type "approle"/);
  });

  describe('approle', () => {
    const roleIdOf = async (role: string) => (await admin('GET', `auth/approle/role/${role}/role-id`)).data.role_id as string;
    const secretIdOf = async (role: string, body: Data = {}) => (await admin('POST', `auth/approle/role/${role}/secret-id`, body)).data;
    const login = (body: Data) => call(loginUrl, 'POST', 'auth/approle/login', undefined, body);

    test('role, secret ID, login through one gateway, use and renew through the other', async () => {
      await admin('POST', 'auth/approle/role/app', { token_policies: 'reader', token_ttl: '5m', token_max_ttl: '1h' });
      const roleId = await roleIdOf('app');
      const { secret_id: secretId, secret_id_accessor: accessor } = await secretIdOf('app', { metadata: { team: 'blue' } });
      expect((await admin('LIST', 'auth/approle/role/app/secret-id')).data.keys).toEqual([accessor]);

      const logged = await login({ role_id: roleId, secret_id: secretId });
      expect(logged.status).toBe(200);
      expect(logged.body.auth).toEqual({
        client_token: expect.stringMatching(/^svs\./),
        accessor: expect.any(String),
        policies: ['reader', 'default'],
        token_policies: ['reader', 'default'],
        metadata: { role_name: 'app', team: 'blue' },
        lease_duration: 300,
        renewable: true,
        entity_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        token_type: 'service',
        orphan: true,
        num_uses: 0,
        mfa_requirement: null,
      });
      const token = logged.body.auth.client_token;
      expect((await ok(useUrl, 'GET', 'kv/shared', token)).data).toEqual({ value: 'for readers' });
      await refused(useUrl, 'PUT', 'kv/shared', token, { value: 'no' }, 403, /permission denied/);
      expect(await lookupSelf(token)).toMatchObject({ path: 'auth/approle/login', display_name: 'approle-app', meta: { role_name: 'app', team: 'blue' }, orphan: true });

      await admin('POST', 'auth/approle/role/app/token-ttl', { token_ttl: '10m' });
      const renewed = await ok(useUrl, 'PUT', 'auth/token/renew-self', token);
      expect(renewed.auth).toMatchObject({ client_token: token, lease_duration: 600, policies: ['reader', 'default'] });
      expect((await lookupSelf(token)).ttl).toBeGreaterThan(590);
    });

    test('a secret ID\'s uses run out; destroyed secret IDs no longer log in; limited-use tokens', async () => {
      await admin('POST', 'auth/approle/role/limited', { token_policies: 'reader', token_num_uses: 2, secret_id_num_uses: 2 });
      const roleId = await roleIdOf('limited');
      const { secret_id: secretId } = await secretIdOf('limited');
      const first = await login({ role_id: roleId, secret_id: secretId });
      expect(first.body.auth.num_uses).toBe(2);
      expect((await login({ role_id: roleId, secret_id: secretId })).status).toBe(200);
      const spent = await login({ role_id: roleId, secret_id: secretId });
      expect([spent.status, spent.body.errors]).toEqual([400, ['invalid role or secret ID']]);
      expect(spent.text).not.toContain(secretId);

      const token = first.body.auth.client_token;
      await ok(useUrl, 'GET', 'kv/shared', token);
      await ok(useUrl, 'GET', 'kv/shared', token);
      await refused(useUrl, 'GET', 'kv/shared', token, undefined, 403, /permission denied/);

      // Logins racing through both gateways for the last use: exactly one gets it.
      const { secret_id: once } = await secretIdOf('limited', { num_uses: 1 });
      const raced = await Promise.all(Array.from({ length: 6 }, (_, i) => call(i % 2 ? useUrl : loginUrl, 'POST', 'auth/approle/login', undefined, { role_id: roleId, secret_id: once })));
      expect(raced.map((res) => res.status).sort()).toEqual([200, 400, 400, 400, 400, 400]);

      const destroyed = await secretIdOf('limited');
      await admin('POST', 'auth/approle/role/limited/secret-id/destroy', { secret_id: destroyed.secret_id });
      expect((await login({ role_id: roleId, secret_id: destroyed.secret_id })).status).toBe(400);
      const byAccessor = await secretIdOf('limited');
      expect((await admin('POST', 'auth/approle/role/limited/secret-id-accessor/lookup', { secret_id_accessor: byAccessor.secret_id_accessor })).data).toMatchObject({ secret_id_num_uses: 2 });
      await admin('POST', 'auth/approle/role/limited/secret-id-accessor/destroy', { secret_id_accessor: byAccessor.secret_id_accessor });
      expect((await login({ role_id: roleId, secret_id: byAccessor.secret_id })).status).toBe(400);
    });

    test('CIDR binding: a login from outside the role\'s blocks is refused; a token bound elsewhere is refused when used', async () => {
      await admin('POST', 'auth/approle/role/fenced', { secret_id_bound_cidrs: '10.0.0.0/8' });
      const { secret_id: fencedSecret } = await secretIdOf('fenced');
      const fenced = await login({ role_id: await roleIdOf('fenced'), secret_id: fencedSecret });
      expect([fenced.status, fenced.body.errors[0]]).toEqual([403, expect.stringMatching(/source address "(::ffff:)?127\.0\.0\.1" is not allowed by the role's CIDR blocks/)]);

      await admin('POST', 'auth/approle/role/bound', { token_policies: 'reader' });
      const elsewhere = await login({ role_id: await roleIdOf('bound'), secret_id: (await secretIdOf('bound', { token_bound_cidrs: '10.0.0.0/8' })).secret_id });
      expect(elsewhere.status).toBe(200);
      await refused(useUrl, 'GET', 'kv/shared', elsewhere.body.auth.client_token, undefined, 403, /permission denied/);
      const here = await login({ role_id: await roleIdOf('bound'), secret_id: (await secretIdOf('bound', { token_bound_cidrs: '127.0.0.0/8' })).secret_id });
      await ok(useUrl, 'GET', 'kv/shared', here.body.auth.client_token);
    });

    test('tidy removes expired secret IDs; a deleted role\'s tokens cannot renew; disabling the method revokes its tokens', async () => {
      await admin('POST', 'auth/approle/role/short', { token_policies: 'reader', secret_id_ttl: '1s' });
      const expiring = await secretIdOf('short');
      await eventually(async () => {
        await admin('POST', 'auth/approle/tidy/secret-id');
        const listed = await call(loginUrl, 'LIST', 'auth/approle/role/short/secret-id', root);
        return listed.status === 404;
      }, 20_000, 250);
      expect((await login({ role_id: await roleIdOf('short'), secret_id: expiring.secret_id })).status).toBe(400);

      await admin('POST', 'auth/approle/role/gone', { token_policies: 'reader' });
      const { body } = await login({ role_id: await roleIdOf('gone'), secret_id: (await secretIdOf('gone')).secret_id });
      await admin('DELETE', 'auth/approle/role/gone');
      await refused(useUrl, 'PUT', 'auth/token/renew-self', body.auth.client_token, {}, 400, /role "gone" no longer exists/);

      await admin('POST', 'sys/auth/approle-temp', { type: 'approle' });
      await ok(loginUrl, 'POST', 'auth/approle-temp/role/temp', root, { token_policies: 'reader' });
      const tempRoleId = (await ok(loginUrl, 'GET', 'auth/approle-temp/role/temp/role-id', root)).data.role_id as string;
      const tempSecret = (await ok(loginUrl, 'POST', 'auth/approle-temp/role/temp/secret-id', root)).data.secret_id as string;
      const temp = await call(loginUrl, 'POST', 'auth/approle-temp/login', undefined, { role_id: tempRoleId, secret_id: tempSecret });
      await ok(useUrl, 'GET', 'kv/shared', temp.body.auth.client_token);
      await admin('DELETE', 'sys/auth/approle-temp');
      await refused(useUrl, 'GET', 'kv/shared', temp.body.auth.client_token, undefined, 403, /permission denied/);
    });
  });

  describe('userpass', () => {
    const login = (username: string, password: string, headers?: Record<string, string>) =>
      call(loginUrl, 'POST', `auth/userpass/login/${username}`, undefined, { password }, headers);

    test('create a user, log in through one gateway, use the token through the other; wrong passwords get one answer', async () => {
      await admin('POST', 'auth/userpass/users/Alice', { password: 'correct horse', token_policies: 'reader', token_ttl: '10m' });
      const logged = await login('alice', 'correct horse');
      expect(logged.status).toBe(200);
      expect(logged.body.auth).toMatchObject({ policies: ['reader', 'default'], metadata: { username: 'alice' }, lease_duration: 600, renewable: true, orphan: true });
      expect((await ok(useUrl, 'GET', 'kv/shared', logged.body.auth.client_token)).data).toEqual({ value: 'for readers' });
      expect(await lookupSelf(logged.body.auth.client_token)).toMatchObject({ path: 'auth/userpass/login/alice', display_name: 'userpass-alice' });

      // A login is outside the ACL: a token sent with it (here a stale one) is ignored.
      expect((await call(loginUrl, 'POST', 'auth/userpass/login/alice', 'svs.stale', { password: 'correct horse' })).status).toBe(200);
      const wrong = await login('alice', 'wrong horse');
      const unknown = await login('mallory', 'correct horse');
      expect([wrong.status, wrong.body.errors]).toEqual([400, ['invalid username or password']]);
      expect([unknown.status, unknown.body.errors]).toEqual([wrong.status, wrong.body.errors]);
      expect(wrong.text).not.toContain('wrong horse');
      expect((await admin('GET', 'auth/userpass/users/alice')).data).not.toHaveProperty('password');
    });

    test('a policy change reaches the token at its next renewal; once the user is deleted, renewal fails', async () => {
      await admin('POST', 'auth/userpass/users/bob', { password: 'builder', token_policies: 'reader' });
      const token = (await login('bob', 'builder')).body.auth.client_token;
      await refused(useUrl, 'PUT', 'kv/bob', token, { value: 'x' }, 403, /permission denied/);

      await admin('POST', 'auth/userpass/users/bob/policies', { token_policies: 'reader,writer' });
      const renewed = await ok(useUrl, 'PUT', 'auth/token/renew-self', token);
      expect(renewed.auth.policies).toEqual(['reader', 'writer', 'default']);
      await ok(useUrl, 'PUT', 'kv/bob', token, { value: 'now allowed' });

      await admin('DELETE', 'auth/userpass/users/bob');
      await refused(useUrl, 'PUT', 'auth/token/renew-self', token, {}, 400, /user "bob" no longer exists; the token cannot be renewed/);
      await refused(loginUrl, 'PUT', 'auth/token/renew', root, { token }, 400, /no longer exists/);
    });

    test('a wrapped login answers a wrapping token; unwrapping gives the login\'s auth once', async () => {
      await admin('POST', 'auth/userpass/users/carol', { password: 'wrapped', token_policies: 'reader' });
      const wrapped = await login('carol', 'wrapped', { 'x-service-wrap-ttl': '5m' });
      expect(wrapped.status).toBe(200);
      expect(wrapped.body.auth).toBeNull();
      const unwrapped = await ok(useUrl, 'PUT', 'sys/wrapping/unwrap', wrapped.body.wrap_info.token);
      expect(unwrapped.auth.accessor).toBe(wrapped.body.wrap_info.wrapped_accessor);
      await ok(useUrl, 'GET', 'kv/shared', unwrapped.auth.client_token);
      await refused(useUrl, 'PUT', 'sys/wrapping/unwrap', wrapped.body.wrap_info.token, {}, 403, /permission denied/);
    });

    test('the audit log records the login with the issued token HMAC-ed, and never the password', async () => {
      const file = path.join(dir, `audit-${kind}.log`);
      await admin('PUT', 'sys/audit/file', { type: 'file', options: { file_path: file } });
      try {
        await admin('POST', 'auth/userpass/users/dave', { password: 'audited secret' });
        const token = (await login('dave', 'audited secret')).body.auth.client_token;
        const text = readFileSync(file, 'utf8');
        expect(text).not.toContain(token);
        expect(text).not.toContain('audited secret');
        const lines = text.trim().split('\n').map((line) => JSON.parse(line) as { type: string; request: { path: string }; response?: { auth?: Data } });
        const answer = lines.find((line) => line.type === 'response' && line.request.path === 'auth/userpass/login/dave');
        const hash = await admin('POST', 'sys/audit-hash/file', { input: token });
        expect(answer?.response?.auth).toMatchObject({ client_token: hash.data.hash, display_name: 'userpass-dave', policies: ['default'] });
      } finally {
        await admin('DELETE', 'sys/audit/file');
      }
    });

    test('bad input is a 400 naming the field', async () => {
      await refused(loginUrl, 'POST', 'auth/userpass/users/erin', root, { token_ttl: '1h' }, 400, /missing required field "password"/);
      await refused(loginUrl, 'POST', 'auth/userpass/users/erin', root, { password: 'x', token_bound_cidrs: 'nowhere' }, 400, /token_bound_cidrs/);
      await refused(loginUrl, 'POST', 'auth/userpass/login/erin', undefined, {}, 400, /missing required field "password"/);
      await refused(loginUrl, 'POST', 'auth/approle/login', undefined, { secret_id: 'x' }, 400, /missing required field "role_id"/);
    });
  });
});
