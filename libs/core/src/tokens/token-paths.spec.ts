import pino from 'pino';
import type { Backend, Capability, Operation, Response } from '@svc/framework';
import { MemoryLockManager } from '@svc/locks';
import { createView, type StorageView } from '@svc/storage';
import { engineRequest, refusal, testMount, unsealedBarrier, type ResponseData } from '@svc/testing';
import type { Entity } from '../identity/identity-store';
import { ExpirationManager } from '../leases/expiration';
import { NamespaceRegistry } from '../namespaces/registry';
import { createRootToken } from './root-token';
import { TokenManager } from './token-manager';
import { createTokenBackend } from './token-paths';
import { BATCH_PREFIX, TokenStore, type TokenEntry } from './token-store';

const LIMITS = { defaultTtl: 3600, maxTtl: 86_400 };
/** What a caller without root or sudo holds on auth/token/. */
const PLAIN: Capability[] = ['create', 'read', 'update', 'delete', 'list'];
const ENTITY: Entity = { id: 'entity-1', name: 'alice', metadata: {}, policies: ['entity-policy'], disabled: false, creation_time: '', last_update_time: '', alias_ids: [] };

describe('auth/token/', () => {
  const mount = testMount('token', { path: 'token/' });
  let backend: Backend;
  let store: TokenStore;
  let tokenStorage: StorageView;
  let rootToken: string;
  /** Hooks the token manager ran, by token accessor. */
  let revokedLeasesOf: string[];
  /** Login tokens renewed through their auth method: [accessor, increment]. */
  let loginRenewals: [string, number][];

  beforeEach(async () => {
    const barrier = unsealedBarrier();
    const namespaces = new NamespaceRegistry(barrier);
    await namespaces.load('1');
    tokenStorage = createView(barrier, 'sys/token/');
    store = new TokenStore(tokenStorage);
    await store.load();
    revokedLeasesOf = [];
    loginRenewals = [];
    const leases = new ExpirationManager(createView(barrier, 'sys/expire/'), new MemoryLockManager(), async () => undefined, pino({ level: 'silent' }));
    const tokenManager = new TokenManager(store, leases, { revokeLeasesOf: async (accessor) => void revokedLeasesOf.push(accessor), purgeCubbyhole: async () => undefined });
    backend = createTokenBackend({
      tokenManager,
      logins: {
        renew: async (entry, increment) => {
          loginRenewals.push([entry.accessor, increment]);
          return { ...entry, ttl: 42 };
        },
      },
      namespaces,
      router: { namespaceOf: ({ mount: { namespace } }) => namespaces.get(namespace)! },
      identityStore: () => ({ identityPolicies: async (id) => (id === ENTITY.id ? ENTITY.policies : []) }),
      tokenLimits: () => LIMITS,
    });
    rootToken = await createRootToken(store);
  });

  /** A request as the holder of `token` sends it (none: no caller), by default with root's capabilities. */
  async function send(token: string | undefined, operation: Operation, path: string, data: Record<string, unknown> = {}, capabilities: Capability[] = ['root']): Promise<Response | undefined> {
    const entry = token ? await store.lookup(token) : null;
    const caller = entry && token ? { caller: { tokenAccessor: entry.accessor, tokenId: token, policies: entry.policies, entityId: entry.entityId, displayName: entry.displayName, namespace: '', meta: {} } } : {};
    return backend.handle({ ...engineRequest(mount, operation, path, data, capabilities), ...caller });
  }

  /** Creates a token as `parent` at `path`; answers its value and its auth block. */
  async function created(parent: string, data: Record<string, unknown> = {}, path = 'create', capabilities?: Capability[]): Promise<{ token: string; auth: ResponseData }> {
    const auth = (await send(parent, 'update', path, data, capabilities))?.token?.auth;
    if (!auth) throw new Error(`${path} answered no token`);
    return { token: auth.client_token, auth: { ...auth } };
  }

  const entryOf = async (token: string): Promise<TokenEntry> => (await store.lookup(token))!;
  const data = async (response: Promise<Response | undefined>): Promise<ResponseData | undefined> => (await response)?.data ?? undefined;

  describe('create', () => {
    it("makes a child of the caller with the default policy, the mount's default TTL and what the request sets", async () => {
      const { token, auth } = await created(rootToken, { policies: 'Reader, writer', display_name: 'app', meta: { team: 'blue' }, num_uses: 3 });
      expect(auth).toEqual({
        client_token: token,
        accessor: expect.any(String),
        policies: ['reader', 'writer', 'default'],
        token_policies: ['reader', 'writer', 'default'],
        metadata: { team: 'blue' },
        lease_duration: 3600,
        renewable: true,
        entity_id: '',
        token_type: 'service',
        orphan: false,
        mfa_requirement: null,
        num_uses: 3,
      });
      expect(await entryOf(token)).toMatchObject({ parent: (await entryOf(rootToken)).accessor, displayName: 'token-app', path: 'auth/token/create' });
    });

    it('bounds the TTL by explicit_max_ttl and the mount maximum, and makes orphans on request', async () => {
      expect((await created(rootToken, { ttl: '2h', explicit_max_ttl: '90m' })).auth.lease_duration).toBe(5400);
      expect((await created(rootToken, { ttl: '48h' })).auth.lease_duration).toBe(86_400);
      expect((await created(rootToken, { no_parent: true })).auth.orphan).toBe(true);
      expect((await created(rootToken, {}, 'create-orphan')).auth.orphan).toBe(true);
      // A root token's child with root's policy and no TTL is another root token: it does not expire.
      expect((await created(rootToken, { policies: 'root' })).auth).toMatchObject({ policies: ['root'], lease_duration: 0 });
    });

    it('makes batch tokens, which are not renewable and cannot make more tokens', async () => {
      const { token, auth } = await created(rootToken, { type: 'batch', policies: 'reader' });
      expect(token.startsWith(BATCH_PREFIX)).toBe(true);
      expect(auth).toMatchObject({ token_type: 'batch', renewable: false, accessor: '' });
      // A batch token has no accessor: it is its own entry.
      expect(await data(send(token, 'read', 'lookup-self'))).toMatchObject({ id: token, policies: ['reader', 'default'], type: 'batch' });
      expect(await refusal(send(token, 'update', 'create'))).toEqual({ status: 400, message: 'batch tokens cannot create more tokens' });
    });

    it('refuses what only root or sudo may ask, and policies the parent does not hold', async () => {
      const { token: parent } = await created(rootToken, { policies: 'reader' });
      const asParent = (fields: Record<string, unknown>) => refusal(send(parent, 'update', 'create', fields, PLAIN));
      expect(await asParent({ id: 'chosen' })).toEqual({ status: 400, message: 'root or sudo privileges required to specify token id' });
      expect(await asParent({ no_parent: true })).toEqual({ status: 400, message: 'root or sudo privileges required to create orphan token' });
      expect(await asParent({ period: '1h' })).toEqual({ status: 400, message: 'root or sudo privileges required to create periodic token' });
      expect(await asParent({ policies: 'reader,admin,ops' })).toEqual({ status: 400, message: 'child policies must be subset of parent: admin, ops' });
      expect(await asParent({ policies: 'root' })).toEqual({ status: 400, message: 'child policies must be subset of parent: root' });
      // Sudo may give policies it does not hold, never root.
      expect(await refusal(send(parent, 'update', 'create', { policies: 'root' }, [...PLAIN, 'sudo']))).toEqual({ status: 400, message: 'root tokens may only be created by root tokens' });
      expect((await created(parent, { policies: 'admin' }, 'create', [...PLAIN, 'sudo'])).auth.policies).toEqual(['admin', 'default']);
      // What it holds it may give; `default` always.
      expect((await created(parent, { policies: 'reader,default' }, 'create', PLAIN)).auth.policies).toEqual(['reader', 'default']);
    });

    it('refuses bad fields, and a caller without a token', async () => {
      const create = (fields: Record<string, unknown>) => refusal(send(rootToken, 'update', 'create', fields));
      expect(await create({ entity_alias: 'alice' })).toEqual({ status: 400, message: 'entity_alias is not supported: token roles do not create entity aliases' });
      expect(await create({ num_uses: -1 })).toEqual({ status: 400, message: 'field "num_uses" cannot be negative' });
      expect(await create({ type: 'batch', period: '1h' })).toEqual({ status: 400, message: 'batch tokens cannot be periodic, limited-use or root tokens' });
      expect(await create({ type: 'batch', policies: 'root' })).toEqual({ status: 400, message: 'batch tokens cannot be periodic, limited-use or root tokens' });
      expect(await create({ type: 'other' })).toMatchObject({ status: 400 });
      expect(await refusal(send(undefined, 'update', 'create'))).toEqual({ status: 403, message: 'permission denied' });
    });
  });

  describe('roles', () => {
    it('writes, reads, updates in part, lists and deletes roles', async () => {
      expect(await send(rootToken, 'create', 'roles/app', { allowed_policies: 'reader,writer', token_ttl: '1h', token_max_ttl: '2h', path_suffix: 'v1' })).toBeUndefined();
      expect(await data(send(rootToken, 'read', 'roles/app'))).toEqual({
        name: 'app',
        allowed_policies: ['reader', 'writer'],
        disallowed_policies: [],
        allowed_policies_glob: [],
        disallowed_policies_glob: [],
        orphan: false,
        renewable: true,
        path_suffix: 'v1',
        token_explicit_max_ttl: 0,
        token_period: 0,
        token_type: 'default-service',
        token_ttl: 3600,
        token_max_ttl: 7200,
        token_no_default_policy: false,
        token_num_uses: 0,
        allowed_entity_aliases: [],
      });
      await send(rootToken, 'update', 'roles/app', { orphan: true });
      expect(await data(send(rootToken, 'read', 'roles/app'))).toMatchObject({ orphan: true, allowed_policies: ['reader', 'writer'], token_ttl: 3600 });
      await send(rootToken, 'create', 'roles/batcher', { token_type: 'batch' });
      expect(await data(send(rootToken, 'list', 'roles/'))).toEqual({ keys: ['app', 'batcher'] });
      await send(rootToken, 'delete', 'roles/app');
      expect(await send(rootToken, 'read', 'roles/app')).toBeUndefined();
      expect(await data(send(rootToken, 'list', 'roles/'))).toEqual({ keys: ['batcher'] });
    });

    it('refuses a TTL above the maximum and a path suffix that climbs', async () => {
      expect(await refusal(send(rootToken, 'create', 'roles/app', { token_ttl: '3h', token_max_ttl: '2h' }))).toEqual({ status: 400, message: 'token_ttl cannot be greater than token_max_ttl' });
      expect(await refusal(send(rootToken, 'create', 'roles/app', { path_suffix: 'a/../b' }))).toEqual({ status: 400, message: 'path_suffix cannot contain ".."' });
      expect(await data(send(rootToken, 'list', 'roles/'))).toEqual({ keys: [] });
    });

    it("creates tokens within a role's policies, type and settings", async () => {
      await send(rootToken, 'create', 'roles/app', { allowed_policies: 'reader', allowed_policies_glob: 'team-*', disallowed_policies: 'team-admin', orphan: true, token_period: '30m', path_suffix: 'v1' });
      const { token, auth } = await created(rootToken, {}, 'create/app');
      expect(auth).toMatchObject({ policies: ['reader', 'default'], orphan: true, lease_duration: 1800 });
      expect(await entryOf(token)).toMatchObject({ role: 'app', period: 1800, path: 'auth/token/create/app/v1' });
      expect((await created(rootToken, { policies: 'team-blue' }, 'create/app')).auth.policies).toEqual(['team-blue', 'default']);

      const inRole = (fields: Record<string, unknown>, role = 'app') => refusal(send(rootToken, 'update', `create/${role}`, fields));
      expect(await inRole({ policies: 'team-admin' })).toEqual({ status: 400, message: "token policies (team-admin) must be subset of the role's allowed policies" });
      expect(await inRole({ policies: 'writer' })).toEqual({ status: 400, message: "token policies (writer) must be subset of the role's allowed policies" });
      expect(await inRole({}, 'nobody')).toEqual({ status: 400, message: 'unknown role nobody' });
      await send(rootToken, 'create', 'roles/batcher', { token_type: 'batch' });
      expect(await inRole({ type: 'service' }, 'batcher')).toEqual({ status: 400, message: 'role only allows batch tokens' });
      expect((await created(rootToken, { policies: 'reader' }, 'create/batcher')).auth.token_type).toBe('batch');
    });
  });

  describe('lookup', () => {
    it('looks a token up by value, as the caller, and by accessor (which shows no value)', async () => {
      const { token, auth } = await created(rootToken, { policies: 'reader', display_name: 'app' });
      const byValue = await data(send(rootToken, 'update', 'lookup', { token }));
      expect(byValue).toMatchObject({ id: token, accessor: auth.accessor, policies: ['reader', 'default'], display_name: 'token-app', ttl: expect.any(Number), orphan: false });
      expect(await data(send(token, 'read', 'lookup-self'))).toEqual(byValue);
      expect(await data(send(rootToken, 'update', 'lookup-accessor', { accessor: auth.accessor }))).toEqual({ ...byValue, id: '' });
    });

    it("shows the policies of the token's entity beside its own", async () => {
      const { token: parent } = await created(rootToken);
      await store.update((await entryOf(parent)).accessor, (entry) => ({ ...entry, entityId: ENTITY.id }));
      // A child belongs to its parent's entity.
      const { token } = await created(parent, {}, 'create', [...PLAIN, 'sudo']);
      expect(await data(send(rootToken, 'update', 'lookup', { token }))).toMatchObject({ entity_id: ENTITY.id, identity_policies: ['entity-policy'] });
    });

    it('refuses a token or accessor that does not exist, and a caller without a token', async () => {
      expect(await refusal(send(rootToken, 'update', 'lookup', { token: 'svs.nothing' }))).toEqual({ status: 400, message: 'bad token' });
      expect(await refusal(send(rootToken, 'update', 'lookup-accessor', { accessor: 'nothing' }))).toEqual({ status: 400, message: 'invalid accessor' });
      expect(await refusal(send(rootToken, 'update', 'lookup'))).toEqual({ status: 400, message: 'missing required field "token"' });
      expect(await refusal(send(undefined, 'read', 'lookup-self'))).toEqual({ status: 403, message: 'permission denied' });
    });
  });

  describe('renew', () => {
    it('renews by value, as the caller, and by accessor, within the limits', async () => {
      const { token, auth } = await created(rootToken, { ttl: '10m' });
      expect((await send(rootToken, 'update', 'renew', { token, increment: '20m' }))?.token?.auth).toMatchObject({ client_token: token, lease_duration: 1200 });
      expect((await send(token, 'update', 'renew-self', { increment: '2h' }))?.token?.auth).toMatchObject({ client_token: token, lease_duration: 7200 });
      // By accessor, the value is not shown. Never past the mount maximum from the token's creation (a clock tick may have passed).
      const renewed = (await send(rootToken, 'update', 'renew-accessor', { accessor: auth.accessor, increment: '48h' }))?.token?.auth;
      expect(renewed).toMatchObject({ client_token: '', accessor: auth.accessor });
      expect(renewed?.lease_duration).toBeGreaterThan(86_390);
      expect(renewed?.lease_duration).toBeLessThanOrEqual(86_400);
      expect((await entryOf(token)).ttl).toBe(renewed?.lease_duration);
    });

    it("renews a login's token through its auth method", async () => {
      const { token } = await created(rootToken);
      await store.update((await entryOf(token)).accessor, (entry) => ({ ...entry, login: { mountAccessor: 'userpass_1', auth: { policies: [], displayName: 'alice', ttl: 60, renewable: true } } }));
      expect((await send(token, 'update', 'renew-self', { increment: 300 }))?.token?.auth).toMatchObject({ lease_duration: 42 });
      expect(loginRenewals).toEqual([[(await entryOf(token)).accessor, 300]]);
    });

    it('refuses a token that is not renewable, or not there', async () => {
      const { token } = await created(rootToken, { renewable: false });
      expect(await refusal(send(rootToken, 'update', 'renew', { token }))).toEqual({ status: 400, message: 'token is not renewable' });
      expect(await refusal(send(rootToken, 'update', 'renew', { token: 'svs.nothing' }))).toEqual({ status: 400, message: 'bad token' });
      expect(await refusal(send(rootToken, 'update', 'renew-accessor', { accessor: 'nothing' }))).toEqual({ status: 400, message: 'invalid accessor' });
    });
  });

  describe('revoke', () => {
    it('revokes a token with its children and their leases, by value, as the caller or by accessor', async () => {
      const { token: parent } = await created(rootToken);
      const { token: child } = await created(parent);
      const [parentAccessor, childAccessor] = [(await entryOf(parent)).accessor, (await entryOf(child)).accessor];
      expect(await send(rootToken, 'update', 'revoke', { token: parent })).toBeUndefined();
      expect(await store.lookup(parent)).toBeNull();
      expect(await store.lookup(child)).toBeNull();
      expect(revokedLeasesOf).toEqual([childAccessor, parentAccessor]);

      const { token: self } = await created(rootToken);
      await send(self, 'update', 'revoke-self');
      const { token: byAccessor, auth } = await created(rootToken);
      await send(rootToken, 'update', 'revoke-accessor', { accessor: auth.accessor });
      expect(await store.lookup(self)).toBeNull();
      expect(await store.lookup(byAccessor)).toBeNull();
      // A token that is not there is revoked already.
      expect(await send(rootToken, 'update', 'revoke', { token: 'svs.nothing' })).toBeUndefined();
    });

    it('revokes a token alone, its children becoming orphans', async () => {
      const { token: parent } = await created(rootToken);
      const { token: child } = await created(parent);
      await send(rootToken, 'update', 'revoke-orphan', { token: parent });
      expect(await store.lookup(parent)).toBeNull();
      expect(await entryOf(child)).toMatchObject({ parent: '' });
    });

    it('refuses to revoke an accessor or orphan a token that does not exist', async () => {
      expect(await refusal(send(rootToken, 'update', 'revoke-accessor', { accessor: 'nothing' }))).toEqual({ status: 400, message: 'invalid accessor' });
      expect(await refusal(send(rootToken, 'update', 'revoke-orphan', { token: 'svs.nothing' }))).toEqual({ status: 400, message: 'bad token' });
      expect(await refusal(send(undefined, 'update', 'revoke-self'))).toEqual({ status: 403, message: 'permission denied' });
    });
  });

  it('lists every accessor, and tidies parent entries that point at nothing', async () => {
    const { auth } = await created(rootToken);
    expect(((await data(send(rootToken, 'list', 'accessors/')))?.keys as string[]).sort()).toEqual([(await entryOf(rootToken)).accessor, auth.accessor].sort());
    // A child index entry left behind by a parent gone without it.
    await tokenStorage.put('parent/gone/orphaned-child', Buffer.alloc(0));
    expect(await send(rootToken, 'update', 'tidy')).toEqual({ data: { removed_parent_entries: 1 }, warnings: ['Tidy operation successfully completed'] });
    expect(await data(send(rootToken, 'update', 'tidy'))).toEqual({ removed_parent_entries: 0 });
  });
});
