/**
 * The identity store end to end, in both topologies: logins through userpass and approle get
 * entities, entity policies and disabling apply at once on every gateway, and first logins of one
 * user racing through two gateways make one entity.
 */
import { randomBytes, randomInt } from 'node:crypto';
import type { AuthBlock } from '@svc/api-contract';
import { api, initAndUnseal, startTopology, type Topology, type TopologyKind } from '@svc/testing';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Data = Record<string, any>;
interface Reply {
  data: Data;
  errors: string[];
  auth: AuthBlock;
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('identity, %s', (kind) => {
  let topology: Topology;
  /** Administration and logins go to `adminUrl`, tokens are used at `useUrl` (another gateway when there is one). */
  let adminUrl: string;
  let useUrl: string;
  let root: string;
  let userpassAccessor: string;

  const call = (url: string, method: string, where: string, token?: string, body?: unknown) => api<Reply>(url, method, `/v1/${where}`, { token, body });
  const admin = async (method: string, where: string, body?: unknown): Promise<Reply> => {
    const res = await call(adminUrl, method, where, root, body);
    expect([res.status, where, res.text]).toEqual([res.status === 204 ? 204 : 200, where, expect.any(String)]);
    return res.body;
  };
  const userpassLogin = (url: string, username: string) => call(url, 'POST', `auth/userpass/login/${username}`, undefined, { password: 'pass-word' });
  const loggedIn = async (username: string): Promise<AuthBlock> => {
    const res = await userpassLogin(adminUrl, username);
    expect([res.status, res.text]).toEqual([200, expect.any(String)]);
    return res.body.auth;
  };
  const newUser = (username: string, policies = 'reader') => admin('POST', `auth/userpass/users/${username}`, { password: 'pass-word', token_policies: policies });

  beforeAll(async () => {
    topology = await startTopology(kind, { gateways: 2 });
    adminUrl = topology.urls[0];
    useUrl = topology.urls[topology.urls.length - 1];
    ({ rootToken: root } = await initAndUnseal(adminUrl));
    await admin('POST', 'sys/mounts/kv', { type: 'kv' });
    await admin('PUT', 'kv/shared', { value: 'for readers' });
    await admin('PUT', 'sys/policies/acl/reader', { policy: 'path "kv/shared" { capabilities = ["read"] }' });
    await admin('PUT', 'sys/policies/acl/writer', { policy: 'path "kv/*" { capabilities = ["create", "update", "read"] }' });
    await admin('POST', 'sys/auth/userpass', { type: 'userpass' });
    await admin('POST', 'sys/auth/approle', { type: 'approle' });
    userpassAccessor = (await admin('GET', 'sys/auth')).data['userpass/'].accessor as string;
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
  });

  test('identity/ is mounted in every namespace', async () => {
    expect((await admin('GET', 'sys/mounts')).data['identity/']).toMatchObject({ type: 'identity' });
  });

  test('a userpass login gets an entity, the same one on the next login, with its alias', async () => {
    await newUser('alice');
    const first = await loggedIn('alice');
    expect(first.entity_id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await loggedIn('alice')).entity_id).toBe(first.entity_id);
    expect((await call(useUrl, 'GET', 'auth/token/lookup-self', first.client_token)).body.data.entity_id).toBe(first.entity_id);

    const entity = (await admin('POST', 'identity/lookup/entity', { alias_name: 'alice', alias_mount_accessor: userpassAccessor })).data;
    expect(entity).toMatchObject({
      id: first.entity_id,
      name: `entity_${first.entity_id}`,
      disabled: false,
      direct_group_ids: [],
      aliases: [{ name: 'alice', mount_accessor: userpassAccessor, mount_path: 'auth/userpass/', mount_type: 'userpass', metadata: {}, canonical_id: first.entity_id }],
    });
    expect((await admin('GET', `identity/entity/id/${first.entity_id}`)).data).toEqual(entity);
  });

  test('an approle login gets an entity of its own', async () => {
    await admin('POST', 'auth/approle/role/app', { token_policies: 'reader' });
    const roleId = (await admin('GET', 'auth/approle/role/app/role-id')).data.role_id as string;
    const login = async () => {
      const secretId = (await admin('POST', 'auth/approle/role/app/secret-id')).data.secret_id as string;
      return (await call(adminUrl, 'POST', 'auth/approle/login', undefined, { role_id: roleId, secret_id: secretId })).body.auth;
    };
    const first = await login();
    expect(first.entity_id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await login()).entity_id).toBe(first.entity_id);
    expect((await admin('GET', `identity/entity/id/${first.entity_id}`)).data.aliases).toMatchObject([{ name: roleId, mount_type: 'approle', metadata: { role_name: 'app' } }]);
  });

  test('first logins of one user racing through both gateways make one entity', async () => {
    await newUser('racer');
    const raced = await Promise.all(Array.from({ length: 6 }, (_, i) => userpassLogin(i % 2 ? useUrl : adminUrl, 'racer')));
    expect(raced.map((res) => res.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(new Set(raced.map((res) => res.body.auth.entity_id)).size).toBe(1);
    const entity = (await admin('POST', 'identity/lookup/entity', { alias_name: 'racer', alias_mount_accessor: userpassAccessor })).data;
    expect(entity.id).toBe(raced[0].body.auth.entity_id);
  });

  test('entity policies grant access at once on every gateway, and are revoked at once', async () => {
    await newUser('bob');
    const { client_token: token, entity_id: entityId } = await loggedIn('bob');
    const write = () => call(useUrl, 'PUT', 'kv/bob', token, { value: 'by bob' });
    expect((await write()).status).toBe(403);

    await admin('POST', `identity/entity/id/${entityId}`, { policies: ['writer'] });
    expect((await write()).status).toBe(204);
    expect((await call(useUrl, 'GET', 'auth/token/lookup-self', token)).body.data).toMatchObject({ policies: ['reader', 'default'], identity_policies: ['writer'] });
    const again = await loggedIn('bob');
    expect(again).toMatchObject({ token_policies: ['reader', 'default'], identity_policies: ['writer'], policies: ['reader', 'default', 'writer'] });

    await admin('POST', `identity/entity/id/${entityId}`, { policies: [] });
    expect((await write()).status).toBe(403);
    expect((await call(useUrl, 'GET', 'kv/shared', token)).status).toBe(200);
  });

  test('a disabled entity cannot log in, and its tokens stop working; enabled again, they work', async () => {
    await newUser('carol');
    const { client_token: token, entity_id: entityId } = await loggedIn('carol');
    await admin('POST', `identity/entity/id/${entityId}`, { disabled: true });
    const refused = await call(useUrl, 'GET', 'kv/shared', token);
    expect([refused.status, refused.body.errors]).toEqual([403, [`entity "${entityId}" is disabled`]]);
    const login = await userpassLogin(useUrl, 'carol');
    expect([login.status, login.body.errors]).toEqual([403, [`entity "${entityId}" is disabled`]]);

    await admin('POST', `identity/entity/id/${entityId}`, { disabled: false });
    expect((await call(useUrl, 'GET', 'kv/shared', token)).status).toBe(200);
  });

  test('bad input is answered with a 400 naming the problem', async () => {
    const res = await call(adminUrl, 'POST', 'identity/entity-alias', root, { name: 'x', mount_accessor: 'nope' });
    expect([res.status, res.body.errors]).toEqual([400, ['field "mount_accessor": no auth mount has accessor "nope"']]);
  });

  test('a name or chosen id longer than 1024 bytes is a 400 naming the field, wherever it is given; 1024 bytes are kept', async () => {
    /** `bytes` characters that storage cannot compress (a compressible name would fit its index for longer). */
    const unguessable = (bytes: number) => randomBytes(bytes).toString('base64url').slice(0, bytes);
    const refused = async (method: string, where: string, body: unknown, field: string) => {
      const res = await call(adminUrl, method, where, root, body);
      expect([where, res.status, res.body.errors]).toEqual([where, 400, [`field "${field}": longer than 1024 bytes`]]);
    };
    const { id: entityId } = (await admin('POST', 'identity/entity', {})).data;
    const { id: aliasId } = (await admin('POST', 'identity/entity-alias', { name: 'short', mount_accessor: userpassAccessor })).data;

    await refused('POST', 'identity/entity', { name: 'a'.repeat(150_000) }, 'name');
    await refused('POST', 'identity/entity', { name: 'é'.repeat(513) }, 'name');
    await refused('POST', `identity/entity/id/${entityId}`, { name: unguessable(1500) }, 'name');
    await refused('POST', `identity/entity/name/${unguessable(1500)}`, {}, 'name');
    await refused('POST', 'identity/entity', { id: unguessable(3000) }, 'id');
    await refused('POST', 'identity/entity-alias', { name: unguessable(1500), mount_accessor: userpassAccessor }, 'name');
    await refused('POST', 'identity/entity-alias', { name: 'chosen', mount_accessor: userpassAccessor, id: unguessable(3000) }, 'id');
    await refused('POST', `identity/entity-alias/id/${aliasId}`, { name: unguessable(1500) }, 'name');

    const longest = unguessable(1024);
    const kept = (await admin('POST', 'identity/entity', { name: longest })).data;
    expect((await admin('GET', `identity/entity/id/${kept.id}`)).data.name).toBe(longest);
    await admin('POST', `identity/entity-alias/id/${aliasId}`, { name: longest });
    expect((await admin('POST', 'identity/lookup/entity', { alias_name: longest, alias_mount_accessor: userpassAccessor })).data.aliases[0].id).toBe(aliasId);

    // A login's alias name is the username here: one userpass keeps (in lower case) but the identity store cannot is refused, not a 500.
    const username = encodeURIComponent(String.fromCodePoint(...Array.from({ length: 500 }, () => 0x4e00 + randomInt(0x5000))));
    await newUser(username);
    const login = await userpassLogin(adminUrl, username);
    expect([login.status, login.body.errors]).toEqual([400, ["the login's alias name is longer than 1024 bytes, the most an entity alias may have"]]);
  });

  test('a chosen id is one path segment, so the id lists still work', async () => {
    for (const [where, body] of [
      ['identity/entity', { id: 'a/b' }],
      ['identity/entity-alias', { id: '..', name: 'segment', mount_accessor: userpassAccessor }],
    ] as const) {
      const res = await call(adminUrl, 'POST', where, root, body);
      expect([where, res.status, res.body.errors]).toEqual([where, 400, ['field "id": must not contain "/" or be ".."']]);
    }
    expect((await call(adminUrl, 'LIST', 'identity/entity/id', root)).status).toBe(200);
  });
});
