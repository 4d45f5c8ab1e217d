/**
 * Issue 3 end to end: tokens, policies, namespaces, leases, response wrapping, cubbyhole and audit
 * devices, through HTTP, in both topologies.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { api, eventually, initAndUnseal, POSTGRES_URL, startTopology, type Topology, type TopologyKind } from '@svc/testing';

interface Auth {
  auth: { client_token: string; accessor: string; policies: string[]; lease_duration: number; renewable: boolean; orphan: boolean };
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('access, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let other: string;
  let root: string;

  const as = (token: string) => ({ token });
  const createToken = async (body: Record<string, unknown>, token = root, where = 'auth/token/create', headers?: Record<string, string>) => {
    const res = await api<Auth>(url, 'POST', `/v1/${where}`, { token, body, headers });
    expect([res.status, res.text]).toEqual([200, expect.any(String)]);
    return res.body.auth;
  };
  const putPolicy = async (name: string, policy: string, headers?: Record<string, string>) => {
    const res = await api(url, 'PUT', `/v1/sys/policies/acl/${name}`, { token: root, body: { policy }, headers });
    expect([res.status, res.text]).toEqual([204, '']);
  };

  beforeAll(async () => {
    topology = await startTopology(kind, { gateways: kind === 'distributed' ? 2 : 1 });
    url = topology.urls[0];
    other = topology.urls[topology.urls.length - 1];
    ({ rootToken: root } = await initAndUnseal(url));
  }, 120_000);

  afterAll(() => topology?.stop());

  describe('tokens', () => {
    test('create, lookup-self, lookup by token and accessor; parent revocation takes the children, orphans survive', async () => {
      await putPolicy('token-creator', 'path "auth/token/create*" { capabilities = ["update"] }');
      const parent = await createToken({ policies: ['token-creator'], ttl: '1h', display_name: 'parent' });
      expect(parent.policies).toEqual(['token-creator', 'default']);
      expect(parent.lease_duration).toBe(3600);
      const self = await api<{ data: Record<string, unknown> }>(url, 'GET', '/v1/auth/token/lookup-self', as(parent.client_token));
      expect(self.body.data).toMatchObject({ accessor: parent.accessor, display_name: 'token-parent', policies: ['token-creator', 'default'], orphan: false, type: 'service' });
      expect(self.body.data.ttl).toBeGreaterThan(3590);

      const child = await createToken({ policies: ['default'] }, parent.client_token);
      const orphan = await createToken({ policies: ['default'] }, parent.client_token, 'auth/token/create-orphan');
      expect(orphan.orphan).toBe(true);
      const byAccessor = await api<{ data: Record<string, unknown> }>(url, 'POST', '/v1/auth/token/lookup-accessor', { token: root, body: { accessor: child.accessor } });
      expect(byAccessor.body.data).toMatchObject({ accessor: child.accessor, id: '' });

      expect((await api(url, 'POST', '/v1/auth/token/revoke', { token: root, body: { token: parent.client_token } })).status).toBe(204);
      expect((await api(url, 'GET', '/v1/auth/token/lookup-self', as(child.client_token))).status).toBe(403);
      expect((await api(url, 'GET', '/v1/auth/token/lookup-self', as(orphan.client_token))).status).toBe(200);
    });

    test('a non-root token cannot grant policies it does not hold or create orphans with no_parent', async () => {
      await putPolicy('reader', 'path "secret/*" { capabilities = ["read"] }');
      const limited = await createToken({ policies: ['reader'] });
      const escalate = await api(url, 'POST', '/v1/auth/token/create', { token: limited.client_token, body: { policies: ['root'] } });
      expect(escalate.status).toBe(403); // reader grants nothing on auth/token/create
      await putPolicy('creator', 'path "auth/token/create" { capabilities = ["update"] }');
      const creator = await createToken({ policies: ['creator'] });
      const tooMuch = await api(url, 'POST', '/v1/auth/token/create', { token: creator.client_token, body: { policies: ['reader'] } });
      expect(tooMuch.status).toBe(400);
      expect(tooMuch.body.errors[0]).toMatch(/subset of parent/);
      const orphan = await api(url, 'POST', '/v1/auth/token/create', { token: creator.client_token, body: { no_parent: true } });
      expect(orphan.status).toBe(400);
    });

    test('TTLs clamp to the mount maximum; periodic tokens renew to their period', async () => {
      expect((await api(url, 'POST', '/v1/sys/auth/token/tune', { token: root, body: { max_lease_ttl: '2h' } })).status).toBe(204);
      const clamped = await createToken({ ttl: '10h' });
      expect(clamped.lease_duration).toBe(7200);
      const periodic = await createToken({ period: '30m', policies: ['default'] });
      expect(periodic.lease_duration).toBe(1800);
      const renewed = await api<Auth>(url, 'POST', '/v1/auth/token/renew-self', { token: periodic.client_token, body: { increment: '5h' } });
      expect(renewed.body.auth.lease_duration).toBe(1800);
      const notRenewable = await createToken({ renewable: false, ttl: '1h' });
      expect((await api(url, 'POST', '/v1/auth/token/renew-self', { token: notRenewable.client_token, body: {} })).status).toBe(400);
      await api(url, 'POST', '/v1/sys/auth/token/tune', { token: root, body: { max_lease_ttl: 0 } });
    });

    test('num_uses counts down; an exhausted token is refused', async () => {
      const twice = await createToken({ num_uses: 2, policies: ['default'] });
      expect((await api(url, 'GET', '/v1/auth/token/lookup-self', as(twice.client_token))).status).toBe(200);
      expect((await api(url, 'GET', '/v1/auth/token/lookup-self', as(twice.client_token))).status).toBe(200);
      expect((await api(url, 'GET', '/v1/auth/token/lookup-self', as(twice.client_token))).status).toBe(403);
    });

    test('an expired token is refused (and revoked by the expiration manager)', async () => {
      const brief = await createToken({ ttl: '1s', policies: ['default'] });
      await eventually(async () => (await api(url, 'GET', '/v1/auth/token/lookup-self', as(brief.client_token))).status === 403, 10_000);
      await eventually(async () => (await api(url, 'POST', '/v1/auth/token/lookup-accessor', { token: root, body: { accessor: brief.accessor } })).status === 400, 10_000);
    });

    test('batch tokens work but cannot create tokens; roles shape created tokens', async () => {
      const batch = await createToken({ type: 'batch', policies: ['default'], ttl: '10m' });
      expect(batch.client_token.startsWith('svb.')).toBe(true);
      expect((await api(url, 'GET', '/v1/auth/token/lookup-self', as(batch.client_token))).status).toBe(200);
      expect((await api(url, 'POST', '/v1/auth/token/create', { token: batch.client_token, body: {} })).status).toBeGreaterThanOrEqual(400);

      expect((await api(url, 'POST', '/v1/auth/token/roles/ci', { token: root, body: { allowed_policies: ['reader'], orphan: true, token_ttl: '20m' } })).status).toBe(204);
      const roles = await api<{ data: { keys: string[] } }>(url, 'LIST', '/v1/auth/token/roles/', as(root));
      expect(roles.body.data.keys).toContain('ci');
      const fromRole = await createToken({ policies: ['reader'] }, root, 'auth/token/create/ci');
      expect(fromRole).toMatchObject({ orphan: true, lease_duration: 1200 });
      expect((await api(url, 'POST', '/v1/auth/token/create/ci', { token: root, body: { policies: ['creator'] } })).status).toBe(400);
      const accessors = await api<{ data: { keys: string[] } }>(url, 'LIST', '/v1/auth/token/accessors/', as(root));
      expect(accessors.body.data.keys).toContain(fromRole.accessor);
      expect((await api(url, 'POST', '/v1/auth/token/tidy', as(root))).status).toBe(200);
    });

    test("a role gives its allowed policies when none are asked for; a sudo token may grant policies it does not hold", async () => {
      await putPolicy('role-reader', 'path "secret/role/*" { capabilities = ["read"] }');
      expect((await api(url, 'POST', '/v1/auth/token/roles/readers', { token: root, body: { allowed_policies: ['role-reader'] } })).status).toBe(204);
      expect((await createToken({}, root, 'auth/token/create/readers')).policies).toEqual(['role-reader', 'default']);

      await putPolicy('sudo-creator', 'path "auth/token/create" { capabilities = ["update", "sudo"] }');
      const sudoCreator = await createToken({ policies: ['sudo-creator'] });
      const child = await createToken({ policies: ['role-reader'] }, sudoCreator.client_token);
      expect(child.policies).toEqual(['role-reader', 'default']);
      const rootChild = await api(url, 'POST', '/v1/auth/token/create', { token: sudoCreator.client_token, body: { policies: ['root'] } });
      expect([rootChild.status, rootChild.body.errors]).toEqual([400, ['root tokens may only be created by root tokens']]);
    });

    test('revocation is in force on every gateway replica as soon as the call returns', async () => {
      const token = await createToken({ policies: ['default'] });
      expect((await api(other, 'GET', '/v1/auth/token/lookup-self', as(token.client_token))).status).toBe(200);
      expect((await api(url, 'POST', '/v1/auth/token/revoke-accessor', { token: root, body: { accessor: token.accessor } })).status).toBe(204);
      expect((await api(other, 'GET', '/v1/auth/token/lookup-self', as(token.client_token))).status).toBe(403);
    });
  });

  describe('policies', () => {
    test('CRUD and LIST, legacy sys/policy, and malformed policies refused with the line', async () => {
      await putPolicy('ops', 'path "secret/ops/*" {\n  capabilities = ["create", "read", "update", "delete", "list"]\n}');
      const read = await api<{ data: { name: string; policy: string } }>(url, 'GET', '/v1/sys/policies/acl/ops', as(root));
      expect(read.body.data.name).toBe('ops');
      expect(read.body.data.policy).toContain('secret/ops/*');
      const list = await api<{ data: { keys: string[] } }>(url, 'LIST', '/v1/sys/policies/acl/', as(root));
      expect(list.body.data.keys).toEqual(expect.arrayContaining(['default', 'ops', 'root']));
      const legacy = await api<{ data: { rules: string } }>(url, 'GET', '/v1/sys/policy/ops', as(root));
      expect(legacy.body.data.rules).toContain('secret/ops/*');

      const badCapability = await api(url, 'PUT', '/v1/sys/policies/acl/bad', { token: root, body: { policy: 'path "a/*" {\n  capabilities = ["fly"]\n}' } });
      expect(badCapability.status).toBe(400);
      expect(badCapability.body.errors.join(' ')).toMatch(/fly/);
      const badSyntax = await api(url, 'PUT', '/v1/sys/policies/acl/bad', { token: root, body: { policy: 'path "a/*" {\n  capabilities = ["read"\n' } });
      expect(badSyntax.status).toBe(400);
      expect(badSyntax.body.errors.join(' ')).toMatch(/line \d+/);
      expect((await api(url, 'GET', '/v1/sys/policies/acl/bad', as(root))).status).toBe(404);
      expect((await api(url, 'PUT', '/v1/sys/policies/acl/root', { token: root, body: { policy: 'path "*" { capabilities = ["read"] }' } })).status).toBe(400);
      expect((await api(url, 'DELETE', '/v1/sys/policies/acl/ops', as(root))).status).toBe(204);
    });

    test('sys/policy, sys/mounts, sys/auth and sys/capabilities* also answer their data at the top level, as Vault does', async () => {
      for (const [method, suffix] of [['GET', ''], ['LIST', ''], ['GET', '?list=true']]) {
        const listed = await api<Record<string, unknown>>(url, method, `/v1/sys/policy${suffix}`, as(root));
        expect(listed.status).toBe(200);
        expect(listed.body.policies).toEqual(expect.arrayContaining(['default', 'root']));
        expect(listed.body.keys).toEqual(listed.body.policies);
        expect(listed.body.data).toEqual({ keys: listed.body.keys, policies: listed.body.policies });
      }
      const one = await api<Record<string, unknown>>(url, 'GET', '/v1/sys/policy/default', as(root));
      expect(one.body).toMatchObject({ name: 'default', rules: expect.stringContaining('path'), data: { name: 'default' } });

      const mounts = await api<Record<string, unknown> & { data: Record<string, unknown> }>(url, 'GET', '/v1/sys/mounts', as(root));
      expect(mounts.body['secret/']).toEqual(mounts.body.data['secret/']);
      expect(mounts.body['sys/']).toMatchObject({ type: 'system' });
      expect(mounts.body.request_id).toEqual(expect.any(String));
      expect((await api<Record<string, unknown>>(url, 'GET', '/v1/sys/mounts/secret', as(root))).body).toMatchObject({ type: 'kv', data: { type: 'kv' } });
      expect((await api<Record<string, unknown>>(url, 'GET', '/v1/sys/auth', as(root))).body['token/']).toMatchObject({ type: 'token' });

      const self = await api<Record<string, unknown>>(url, 'POST', '/v1/sys/capabilities-self', { token: root, body: { paths: ['secret/x'] } });
      expect(self.body).toMatchObject({ capabilities: ['root'], 'secret/x': ['root'] });
      const byToken = await api<Record<string, unknown>>(url, 'POST', '/v1/sys/capabilities', { token: root, body: { token: root, paths: ['secret/x'] } });
      expect(byToken.body.capabilities).toEqual(['root']);
      // Vault keeps sys/policies/acl in the envelope only.
      expect((await api<Record<string, unknown>>(url, 'LIST', '/v1/sys/policies/acl', as(root))).body.keys).toBeUndefined();
    });

    test('legacy sys/policy/:name takes the deprecated rules field, with a warning', async () => {
      const written = await api(url, 'PUT', '/v1/sys/policy/legacy-rules', { token: root, body: { rules: 'path "secret/legacy/*" { capabilities = ["read"] }' } });
      expect([written.status, written.body.warnings]).toEqual([200, ['"rules" is deprecated, use "policy" instead']]);
      const read = await api<{ data: { policy: string } }>(url, 'GET', '/v1/sys/policies/acl/legacy-rules', as(root));
      expect(read.body.data.policy).toContain('secret/legacy/*');
      const missing = await api(url, 'PUT', '/v1/sys/policy/legacy-rules', { token: root, body: {} });
      expect([missing.status, missing.body.errors]).toEqual([400, ['missing required field "policy"']]);
    });

    test('create versus update is decided by the existence check', async () => {
      await putPolicy('update-only', 'path "secret/app/*" { capabilities = ["update"] }');
      const token = await createToken({ policies: ['update-only'] });
      const missing = await api(url, 'PUT', '/v1/secret/app/new', { token: token.client_token, body: { a: '1' } });
      expect(missing.status).toBe(403);
      expect((await api(url, 'PUT', '/v1/secret/app/existing', { token: root, body: { a: '1' } })).status).toBe(204);
      expect((await api(url, 'PUT', '/v1/secret/app/existing', { token: token.client_token, body: { a: '2' } })).status).toBe(204);
      expect((await api(url, 'GET', '/v1/secret/app/existing', { token: token.client_token })).status).toBe(403);
    });

    test('globs, + segments and precedence; deny wins; parameter constraints', async () => {
      await putPolicy(
        'shaped',
        [
          'path "secret/team/*" { capabilities = ["read", "list"] }',
          'path "secret/team/+/private" { capabilities = ["deny"] }',
          'path "secret/team/alice/*" { capabilities = ["read", "create", "update"]\n  allowed_parameters = { "colour" = ["red", "blue"], "size" = [] }\n  required_parameters = ["colour"] }',
        ].join('\n'),
      );
      const token = (await createToken({ policies: ['shaped'] })).client_token;
      await api(url, 'PUT', '/v1/secret/team/bob/public', { token: root, body: { v: 1 } });
      await api(url, 'PUT', '/v1/secret/team/bob/private', { token: root, body: { v: 2 } });
      expect((await api(url, 'GET', '/v1/secret/team/bob/public', { token })).status).toBe(200);
      expect((await api(url, 'GET', '/v1/secret/team/bob/private', { token })).status).toBe(403);
      expect((await api(url, 'PUT', '/v1/secret/team/bob/public', { token, body: { v: 3 } })).status).toBe(403);
      expect((await api(url, 'PUT', '/v1/secret/team/alice/x', { token, body: { colour: 'red', size: 'L' } })).status).toBe(204);
      const wrongValue = await api(url, 'PUT', '/v1/secret/team/alice/x', { token, body: { colour: 'green' } });
      expect(wrongValue.status).toBe(403);
      expect(wrongValue.text).not.toContain('green');
      expect((await api(url, 'PUT', '/v1/secret/team/alice/x', { token, body: { size: 'L' } })).status).toBe(403);
      expect((await api(url, 'PUT', '/v1/secret/team/alice/x', { token, body: { colour: 'red', shape: 'round' } })).status).toBe(403);
    });

    test('sudo endpoints need sudo; sys/capabilities, -self and -accessor report capabilities', async () => {
      await putPolicy('almost-admin', 'path "sys/audit" { capabilities = ["read"] }\npath "sys/leases/revoke-prefix/*" { capabilities = ["update"] }');
      const token = await createToken({ policies: ['almost-admin', 'shaped'] });
      const noSudo = await api(url, 'GET', '/v1/sys/audit', { token: token.client_token });
      expect(noSudo.status).toBe(403);
      expect(noSudo.body.errors[0]).toMatch(/sudo/);
      await putPolicy('almost-admin', 'path "sys/audit" { capabilities = ["read", "sudo"] }');
      expect((await api(url, 'GET', '/v1/sys/audit', { token: token.client_token })).status).toBe(200);

      const self = await api<{ data: Record<string, string[]> }>(url, 'POST', '/v1/sys/capabilities-self', { token: token.client_token, body: { paths: ['secret/team/x/y', 'secret/nothing'] } });
      expect(self.body.data['secret/team/x/y']).toEqual(['list', 'read']);
      expect(self.body.data['secret/nothing']).toEqual(['deny']);
      const byToken = await api<{ data: { capabilities: string[] } }>(url, 'POST', '/v1/sys/capabilities', { token: root, body: { token: token.client_token, paths: ['sys/audit'] } });
      expect(byToken.body.data.capabilities).toEqual(['read', 'sudo']);
      const byAccessor = await api<{ data: { capabilities: string[] } }>(url, 'POST', '/v1/sys/capabilities-accessor', { token: root, body: { accessor: token.accessor, paths: 'sys/audit' } });
      expect(byAccessor.body.data.capabilities).toEqual(['read', 'sudo']);
    });

    test("sys/capabilities, -self and -accessor take Vault's older path field, a string or a list; capabilities is added for one path only", async () => {
      await putPolicy('team-reader', 'path "secret/team/*" { capabilities = ["read", "list"] }');
      const { client_token: token, accessor } = await createToken({ policies: ['team-reader'] });
      const ask = (where: string, body: Record<string, unknown>, caller = root) => api<{ data: Record<string, string[]>; errors: string[] }>(url, 'POST', `/v1/sys/${where}`, { token: caller, body });

      const self = await ask('capabilities-self', { path: 'secret/team/x' }, token);
      expect([self.status, self.body.data]).toEqual([200, { 'secret/team/x': ['list', 'read'], capabilities: ['list', 'read'] }]);
      const byToken = await ask('capabilities', { token, path: ['secret/team/x', 'secret/other'] });
      expect([byToken.status, byToken.body.data]).toEqual([200, { 'secret/team/x': ['list', 'read'], 'secret/other': ['deny'] }]);
      const byAccessor = await ask('capabilities-accessor', { accessor, path: 'secret/other' });
      expect([byAccessor.status, byAccessor.body.data]).toEqual([200, { 'secret/other': ['deny'], capabilities: ['deny'] }]);
      const both = await ask('capabilities-self', { paths: ['secret/team/x'], path: 'secret/other' }, token);
      expect(both.body.data).toEqual({ 'secret/team/x': ['list', 'read'], capabilities: ['list', 'read'] });

      for (const [where, body] of [['capabilities-self', {}], ['capabilities', { token }], ['capabilities-accessor', { accessor, paths: [], path: '' }]] as const) {
        const refused = await ask(where, body);
        expect([where, refused.status, refused.body.errors]).toEqual([where, 400, ['missing required field "paths"']]);
      }
    });
  });

  describe('namespaces', () => {
    test('nested namespaces; the three path forms are equivalent', async () => {
      expect((await api(url, 'POST', '/v1/sys/namespaces/eng', as(root))).status).toBe(200);
      expect((await api(url, 'POST', '/v1/sys/namespaces/web', { token: root, headers: { 'x-service-namespace': 'eng' } })).status).toBe(200);
      const listed = await api<{ data: { keys: string[] } }>(url, 'LIST', '/v1/sys/namespaces/', as(root));
      expect(listed.body.data.keys).toEqual(['eng/']);
      expect((await api(url, 'POST', '/v1/eng/web/sys/mounts/kv', { token: root, body: { type: 'kv' } })).status).toBe(204);

      const write = await api(url, 'PUT', '/v1/kv/shared', { token: root, body: { v: 'nested' }, headers: { 'x-service-namespace': 'eng/web' } });
      expect(write.status).toBe(204);
      for (const [headers, urlPath] of [
        [{ 'x-service-namespace': 'eng/web' }, '/v1/kv/shared'],
        [{}, '/v1/eng/web/kv/shared'],
        [{ 'x-service-namespace': 'eng' }, '/v1/web/kv/shared'],
      ] as const) {
        const res = await api<{ data: unknown }>(other, 'GET', urlPath, { token: root, headers: headers as Record<string, string> });
        expect([urlPath, res.body.data]).toEqual([urlPath, { v: 'nested' }]);
      }
      expect((await api(url, 'GET', '/v1/kv/shared', as(root))).status).toBe(404);
    });

    test('a parent token reaches a child through policies for the child\'s paths; a child token never reaches its parent or siblings', async () => {
      await putPolicy('to-child', 'path "eng/web/kv/*" { capabilities = ["read"] }');
      const parentToken = (await createToken({ policies: ['to-child'] })).client_token;
      expect((await api(url, 'GET', '/v1/eng/web/kv/shared', { token: parentToken })).status).toBe(200);
      expect((await api(url, 'GET', '/v1/kv/shared', { token: parentToken, headers: { 'x-service-namespace': 'eng/web' } })).status).toBe(200);

      const ns = { 'x-service-namespace': 'eng/web' };
      await putPolicy('everything', 'path "*" { capabilities = ["create", "read", "update", "delete", "list", "sudo"] }', ns);
      const childToken = await createToken({ policies: ['everything'] }, root, 'auth/token/create', ns);
      expect((await api(url, 'GET', '/v1/kv/shared', { token: childToken.client_token, headers: ns })).status).toBe(200);
      expect((await api(url, 'GET', '/v1/secret/app/existing', { token: childToken.client_token })).status).toBe(403);
      expect((await api(url, 'GET', '/v1/sys/mounts', { token: childToken.client_token, headers: { 'x-service-namespace': 'eng' } })).status).toBe(403);
      expect((await api(url, 'POST', '/v1/sys/namespaces/api', { token: root, headers: { 'x-service-namespace': 'eng' } })).status).toBe(200);
      expect((await api(url, 'GET', '/v1/sys/mounts', { token: childToken.client_token, headers: { 'x-service-namespace': 'eng/api' } })).status).toBe(403);
    });

    test('root-namespace endpoints refuse calls from a child namespace', async () => {
      const res = await api(url, 'PUT', '/v1/sys/rotate', { token: root, headers: { 'x-service-namespace': 'eng' } });
      expect(res.status).toBe(400);
      expect(res.body.errors[0]).toMatch(/root namespace/);
    });

    test('deleting a namespace revokes its tokens and removes its mounts', async () => {
      const ns = { 'x-service-namespace': 'eng/web' };
      const childToken = await createToken({ policies: ['everything'] }, root, 'auth/token/create', ns);
      expect((await api(url, 'DELETE', '/v1/sys/namespaces/eng', as(root))).status).toBe(400); // has children
      expect((await api(url, 'DELETE', '/v1/sys/namespaces/web', { token: root, headers: { 'x-service-namespace': 'eng' } })).status).toBe(204);
      expect((await api(url, 'GET', '/v1/auth/token/lookup-self', { token: childToken.client_token, headers: ns })).status).toBe(403);
      expect((await api(url, 'GET', '/v1/eng/web/kv/shared', as(root))).status).toBe(404);
    });
  });

  describe('leases', () => {
    test('token leases: lookup, LIST by prefix (sudo) and revoke-prefix', async () => {
      const token = await createToken({ ttl: '1h', policies: ['default'] });
      const leaseId = `auth/token/create/${token.accessor}`;
      const lookup = await api<{ data: { id: string; ttl: number; renewable: boolean } }>(url, 'PUT', '/v1/sys/leases/lookup', { token: root, body: { lease_id: leaseId } });
      expect(lookup.body.data).toMatchObject({ id: leaseId, renewable: true });
      expect(lookup.body.data.ttl).toBeGreaterThan(3500);
      const listed = await api<{ data: { keys: string[] } }>(url, 'LIST', '/v1/sys/leases/lookup/auth/token/create/', as(root));
      expect(listed.body.data.keys).toContain(token.accessor);
      expect((await api(url, 'PUT', '/v1/sys/leases/lookup', { token: root, body: { lease_id: 'nope/x' } })).status).toBe(400);
      expect((await api(url, 'PUT', `/v1/sys/leases/revoke-prefix/${leaseId}`, as(root))).status).toBe(204);
      expect((await api(url, 'GET', '/v1/auth/token/lookup-self', as(token.client_token))).status).toBe(403);
    });
  });

  describe('response wrapping and cubbyhole', () => {
    test('X-Service-Wrap-TTL wraps a response; unwrap works once; lookup and rewrap', async () => {
      await api(url, 'PUT', '/v1/secret/wrapped', { token: root, body: { password: 'hunter2' } });
      const wrapped = await api<{ data: unknown; wrap_info: { token: string; ttl: number; creation_path: string; creation_time: string } }>(url, 'GET', '/v1/secret/wrapped', {
        token: root,
        headers: { 'x-service-wrap-ttl': '5m' },
      });
      expect(wrapped.body.data).toBeNull();
      expect(wrapped.body.wrap_info).toMatchObject({ ttl: 300, creation_path: 'secret/wrapped' });
      expect(wrapped.text).not.toContain('hunter2');
      const lookup = await api<{ data: Record<string, unknown> }>(url, 'POST', '/v1/sys/wrapping/lookup', { token: root, body: { token: wrapped.body.wrap_info.token } });
      expect(lookup.body.data).toMatchObject({ creation_path: 'secret/wrapped', creation_ttl: 300 });
      const rewrapped = await api<{ wrap_info: { token: string } }>(url, 'POST', '/v1/sys/wrapping/rewrap', { token: root, body: { token: wrapped.body.wrap_info.token } });
      expect((await api(url, 'POST', '/v1/sys/wrapping/unwrap', { token: root, body: { token: wrapped.body.wrap_info.token } })).status).toBe(400);
      const unwrapped = await api<{ data: unknown }>(other, 'POST', '/v1/sys/wrapping/unwrap', { token: rewrapped.body.wrap_info.token });
      expect(unwrapped.body.data).toEqual({ password: 'hunter2' });
      const again = await api(url, 'POST', '/v1/sys/wrapping/unwrap', { token: rewrapped.body.wrap_info.token });
      expect(again.status).toBe(403);

      const wrapData = await api<{ wrap_info: { token: string } }>(url, 'POST', '/v1/sys/wrapping/wrap', { token: root, body: { any: 'thing' } });
      expect((await api<{ data: unknown }>(url, 'POST', '/v1/sys/wrapping/unwrap', { token: root, body: { token: wrapData.body.wrap_info.token } })).body.data).toEqual({ any: 'thing' });
    });

    test('policy min/max_wrapping_ttl are enforced', async () => {
      await putPolicy('must-wrap', 'path "secret/wrapped" {\n  capabilities = ["read"]\n  min_wrapping_ttl = "1m"\n  max_wrapping_ttl = "10m"\n}');
      const token = (await createToken({ policies: ['must-wrap'] })).client_token;
      expect((await api(url, 'GET', '/v1/secret/wrapped', { token })).status).toBe(400);
      expect((await api(url, 'GET', '/v1/secret/wrapped', { token, headers: { 'x-service-wrap-ttl': '1h' } })).status).toBe(400);
      expect((await api(url, 'GET', '/v1/secret/wrapped', { token, headers: { 'x-service-wrap-ttl': '5m' } })).status).toBe(200);
    });

    test('cubbyhole is private to each token and destroyed with it', async () => {
      const alice = await createToken({ policies: ['default'] });
      const bob = await createToken({ policies: ['default'] });
      expect((await api(url, 'PUT', '/v1/cubbyhole/note', { token: alice.client_token, body: { text: 'mine' } })).status).toBe(204);
      expect((await api<{ data: unknown }>(other, 'GET', '/v1/cubbyhole/note', { token: alice.client_token })).body.data).toEqual({ text: 'mine' });
      expect((await api(url, 'GET', '/v1/cubbyhole/note', { token: bob.client_token })).status).toBe(404);
      expect((await api(url, 'GET', '/v1/cubbyhole/note', { token: root })).status).toBe(404);
      await api(url, 'POST', '/v1/auth/token/revoke-accessor', { token: root, body: { accessor: alice.accessor } });
      const again = await createToken({ policies: ['default'] });
      expect((await api(url, 'LIST', '/v1/cubbyhole/', { token: again.client_token })).status).toBe(404);
    });
  });

  if (kind === 'distributed') {
    test('no token value is stored in a usable form: the storage table holds no token string', async () => {
      const token = await createToken({ policies: ['default'] });
      const client = new Client({ connectionString: POSTGRES_URL });
      await client.connect();
      try {
        // This cluster's tables only: other suites running beside it have tables of their own, some large.
        const tables = await client.query<{ tablename: string }>(`SELECT tablename FROM pg_tables WHERE tablename LIKE $1 AND tablename NOT LIKE '%migrations'`, [`${topology.storageTable}%`]);
        expect(tables.rows.map(({ tablename }) => tablename)).toContain(topology.storageTable);
        let rows = 0;
        for (const { tablename } of tables.rows) {
          const result = await client.query(`SELECT * FROM ${tablename}`);
          rows += result.rowCount ?? 0;
          expect(JSON.stringify(result.rows)).not.toContain(token.client_token.slice(4));
          expect(JSON.stringify(result.rows)).not.toContain(root.slice(4));
        }
        expect(rows).toBeGreaterThan(0);
      } finally {
        await client.end();
      }
    });
  }
});

describe('audit devices', () => {
  let topology: Topology;
  let url: string;
  let root: string;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-audit-'));
    topology = await startTopology('all-in-one');
    url = topology.urls[0];
    ({ rootToken: root } = await initAndUnseal(url));
    // As long as the suite above allows: with gateway workers (SVC_TEST_WORKERS) on a loaded machine, starting takes longer.
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('every request and response is one JSON line, secrets HMAC-ed; sys/audit-hash gives the same hash', async () => {
    const file = path.join(dir, 'audit.log');
    expect((await api(url, 'PUT', '/v1/sys/audit/file', { token: root, body: { type: 'file', options: { file_path: file } } })).status).toBe(204);
    const listed = await api<{ data: Record<string, { type: string }> }>(url, 'GET', '/v1/sys/audit', { token: root });
    expect(listed.body.data['file/']).toMatchObject({ type: 'file' });
    // Vault also answers sys/audit with its data at the top level.
    expect((listed.body as unknown as Record<string, unknown>)['file/']).toEqual(listed.body.data['file/']);
    await api(url, 'PUT', '/v1/secret/audited', { token: root, body: { password: 'correct horse' } });
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { type: string; request: { path: string; data: Record<string, string> }; auth?: { client_token: string } });
    const write = lines.filter((l) => l.request.path === 'secret/audited');
    expect(write.map((l) => l.type)).toEqual(['request', 'response']);
    expect(readFileSync(file, 'utf8')).not.toContain('correct horse');
    expect(readFileSync(file, 'utf8')).not.toContain(root);
    const hash = await api<{ data: { hash: string } }>(url, 'POST', '/v1/sys/audit-hash/file', { token: root, body: { input: 'correct horse' } });
    expect(write[0].request.data.password).toBe(hash.body.data.hash);
  });

  test('a batch the engine answered as JSON text is audited like any other answer, every string HMAC-ed', async () => {
    const file = path.join(dir, 'audit.log');
    expect((await api(url, 'POST', '/v1/sys/mounts/transit', { token: root, body: { type: 'transit' } })).status).toBe(204);
    expect((await api(url, 'POST', '/v1/transit/keys/audited', { token: root })).status).toBe(200);
    const plaintext = Buffer.from('correct horse').toString('base64');
    const encrypted = await api<{ data: { batch_results: { ciphertext: string }[] } }>(url, 'POST', '/v1/transit/encrypt/audited', {
      token: root,
      body: { batch_input: [{ plaintext, reference: 'one' }] },
    });
    expect(encrypted.status).toBe(200);
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { type: string; request: { path: string }; response?: { data: { batch_results: Record<string, string>[] } } });
    const answer = lines.find((l) => l.type === 'response' && l.request.path === 'transit/encrypt/audited');
    expect(answer?.response?.data.batch_results).toEqual([{ ciphertext: expect.stringMatching(/^hmac-sha256:/), key_version: 1, reference: expect.stringMatching(/^hmac-sha256:/) }]);
    expect(readFileSync(file, 'utf8')).not.toContain(encrypted.body.data.batch_results[0].ciphertext);
    expect(readFileSync(file, 'utf8')).not.toContain(plaintext);
  });

  test('with no device able to log, requests fail instead of going unaudited', async () => {
    expect((await api(url, 'PUT', '/v1/sys/audit/full', { token: root, body: { type: 'file', options: { file_path: '/dev/full' } } })).status).toBe(204);
    expect((await api(url, 'GET', '/v1/secret/audited', { token: root })).status).toBe(200); // the file device still logs
    // Disabling the working device happens, but its own response can no longer be audited.
    const disable = await api(url, 'DELETE', '/v1/sys/audit/file', { token: root });
    expect(disable.status).toBe(500);
    expect(disable.body.errors[0]).toMatch(/audit/);
    const refused = await api(url, 'GET', '/v1/secret/audited', { token: root });
    expect(refused.status).toBe(500);
    expect(refused.body.errors[0]).toMatch(/audit/);
    expect(refused.text).not.toContain('correct horse');
  });
});
