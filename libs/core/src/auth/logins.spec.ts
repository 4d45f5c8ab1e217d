import pino from 'pino';
import type { EngineReply, EngineRequest } from '@svc/engine-host';
import type { AuthResponse } from '@svc/framework';
import { MemoryLockManager } from '@svc/locks';
import { createView } from '@svc/storage';
import { refusal, unsealedBarrier } from '@svc/testing';
import { namespaceIdentity, type IdentityStore } from '../identity/identity-store';
import { ExpirationManager } from '../leases/expiration';
import type { MountEntry } from '../mounts/mount-table';
import type { Namespace } from '../namespaces/namespace';
import { NamespaceRegistry } from '../namespaces/registry';
import { TokenManager } from '../tokens/token-manager';
import { TokenStore } from '../tokens/token-store';
import { Logins } from './logins';

const SYSTEM_LIMITS = { defaultTtl: 3600, maxTtl: 7200 };

function auth(overrides: Partial<AuthResponse> = {}): AuthResponse {
  return { policies: ['Reader'], displayName: 'alice', ttl: 0, renewable: true, metadata: { username: 'alice' }, internalData: { username: 'alice' }, ...overrides };
}

describe('Logins (the core\'s login path)', () => {
  let namespace: Namespace;
  let mount: MountEntry;
  let tokens: TokenManager;
  let expiration: ExpirationManager;
  let logins: Logins;
  let identity: IdentityStore;
  /** What the auth method answers to a renewal; records the messages it was sent. */
  let methodAnswer: (message: EngineRequest) => EngineReply;
  let sent: EngineRequest[];

  beforeEach(async () => {
    const barrier = unsealedBarrier();
    const namespaces = new NamespaceRegistry(barrier);
    await namespaces.load('1');
    namespace = namespaces.root;
    identity = namespaceIdentity(barrier, namespace);
    mount = await namespace.authMounts.mount({ path: 'userpass', type: 'userpass' }, { default_lease_ttl: 0, max_lease_ttl: 0 });
    const store = new TokenStore(createView(barrier, 'sys/token/'));
    await store.load();
    expiration = new ExpirationManager(createView(barrier, 'sys/expire/'), new MemoryLockManager(), async () => undefined, pino({ level: 'silent' }));
    tokens = new TokenManager(store, expiration, { revokeLeasesOf: async () => undefined, purgeCubbyhole: async () => undefined });
    sent = [];
    methodAnswer = (message) => ({ ok: true, response: { auth: message.kind === 'renew-auth' ? message.auth : undefined } });
    logins = new Logins({
      tokens,
      namespaces,
      limits: (entry) => ({ defaultTtl: entry.config.default_lease_ttl || SYSTEM_LIMITS.defaultTtl, maxTtl: entry.config.max_lease_ttl || SYSTEM_LIMITS.maxTtl }),
      dispatch: async (message) => {
        sent.push(message);
        return methodAnswer(message);
      },
      identity: (of) => namespaceIdentity(barrier, of),
    });
  });

  const place = () => ({ namespace, mount, path: 'auth/userpass/login/alice' });

  it('makes an orphan service token: default policy added, display name after the mount, lease under the login path', async () => {
    const answer = await logins.complete(place(), { auth: auth({ boundCidrs: ['127.0.0.1/32'] }), warnings: ['kept'] });
    expect(answer.auth).toBeUndefined();
    expect(answer.warnings).toEqual(['kept']);
    const block = answer.token!.auth;
    expect(block).toEqual({
      client_token: expect.stringMatching(/^svs\./),
      accessor: expect.any(String),
      policies: ['reader', 'default'],
      token_policies: ['reader', 'default'],
      metadata: { username: 'alice' },
      lease_duration: 3600,
      renewable: true,
      entity_id: '',
      token_type: 'service',
      orphan: true,
      num_uses: 0,
      mfa_requirement: null,
    });
    expect(answer.token!.displayName).toBe('userpass-alice');
    const entry = (await tokens.store.lookup(block.client_token))!;
    expect(entry).toMatchObject({ path: 'auth/userpass/login/alice', parent: '', boundCidrs: ['127.0.0.1/32'], login: { mountAccessor: mount.accessor } });
    expect(await expiration.get(namespace.record.id, `auth/userpass/login/alice/${block.accessor}`)).toMatchObject({ kind: 'token' });
  });

  it('keeps the TTL within the method\'s maximum, then the mount\'s, then the system\'s', async () => {
    const ttlOf = async (overrides: Partial<AuthResponse>) => (await logins.complete(place(), { auth: auth(overrides) })).token!.auth.lease_duration;
    expect(await ttlOf({ ttl: 36_000 })).toBe(7200);
    expect(await ttlOf({ ttl: 36_000, maxTtl: 600 })).toBe(600);
    expect(await ttlOf({ ttl: 300, explicitMaxTtl: 60 })).toBe(60);
    expect(await ttlOf({ period: 900, ttl: 60 })).toBe(900);
    await namespace.authMounts.tune('userpass', { config: { default_lease_ttl: 120, max_lease_ttl: 240 } }, { default_lease_ttl: 0, max_lease_ttl: 0 });
    mount = namespace.authMounts.get('userpass/')!;
    expect(await ttlOf({})).toBe(120);
    expect(await ttlOf({ ttl: 1000 })).toBe(240);
  });

  it('follows the method on the default policy, the token type and limited uses; never makes a root token', async () => {
    expect((await logins.complete(place(), { auth: auth({ noDefaultPolicy: true }) })).token!.auth.policies).toEqual(['reader']);
    const batch = (await logins.complete(place(), { auth: auth({ tokenType: 'batch' }) })).token!.auth;
    expect([batch.token_type, batch.client_token.startsWith('svb.'), batch.renewable]).toEqual(['batch', true, false]);
    expect((await logins.complete(place(), { auth: auth({ numUses: 3 }) })).token!.auth.num_uses).toBe(3);
    expect(await refusal(logins.complete(place(), { auth: auth({ policies: ['root'] }) }))).toEqual({ status: 400, message: 'auth methods cannot create root tokens' });
    expect(await refusal(logins.complete(place(), { auth: auth({ tokenType: 'batch', period: 60 }) }))).toMatchObject({ status: 400 });
    expect(await refusal(logins.complete({ ...place(), path: 'kv/login' }, { auth: auth() }))).toMatchObject({ status: 500 });
  });

  it('gives a login with an alias the entity of that alias, creating it on the first login', async () => {
    const first = (await logins.complete(place(), { auth: auth({ alias: { name: 'alice', metadata: { username: 'alice' } } }) })).token!.auth;
    const entity = (await identity.aliasByName(mount.accessor, 'alice'))!;
    expect(first.entity_id).toBe(entity.canonical_id);
    expect((await tokens.store.lookup(first.client_token))!.entityId).toBe(entity.canonical_id);
    expect((await identity.entity(entity.canonical_id))!.name).toBe(`entity_${entity.canonical_id}`);

    await identity.updateEntity(entity.canonical_id, { policies: ['ops'] });
    const second = (await logins.complete(place(), { auth: auth({ alias: { name: 'alice', metadata: { username: 'alice', team: 'blue' } } }) })).token!.auth;
    expect(second).toMatchObject({ entity_id: entity.canonical_id, policies: ['reader', 'default', 'ops'], token_policies: ['reader', 'default'], identity_policies: ['ops'] });
    expect((await identity.aliasByName(mount.accessor, 'alice'))!.metadata).toEqual({ username: 'alice', team: 'blue' });
    expect(await identity.entityIds()).toEqual([entity.canonical_id]);

    // Without an alias there is no entity.
    expect((await logins.complete(place(), { auth: auth() })).token!.auth.entity_id).toBe('');

    await identity.updateEntity(entity.canonical_id, { disabled: true });
    expect(await refusal(logins.complete(place(), { auth: auth({ alias: { name: 'alice' } }) }))).toEqual({ status: 403, message: `entity "${entity.canonical_id}" is disabled` });
  });

  it('makes the entity a member of the external groups its provider named, and of no others of the mount', async () => {
    const other = await namespace.authMounts.mount({ path: 'oidc', type: 'oidc' }, { default_lease_ttl: 0, max_lease_ttl: 0 });
    const external = async (name: string, accessor: string, policies: string[]) => {
      const group = await identity.groups.upsertGroup({ name, type: 'external', policies });
      await identity.groups.createAlias({ name, mount_accessor: accessor, canonical_id: group.id });
      return group.id;
    };
    const admins = await external('admins', mount.accessor, ['admin']);
    const devs = await external('devs', mount.accessor, ['dev']);
    const elsewhere = await external('auditors', other.accessor, ['audit']);
    const withGroups = (groupAliases: string[]) => logins.complete(place(), { auth: auth({ alias: { name: 'alice' }, groupAliases }) });

    const first = (await withGroups(['admins', 'devs', 'unknown'])).token!.auth;
    expect(first.identity_policies).toEqual(['admin', 'dev']);
    const entityId = first.entity_id;
    // A membership through another mount's login stays when this mount's provider does not name it.
    await identity.loginEntity(other.accessor, 'alice@other', {}, ['auditors']);
    const otherEntity = (await identity.aliasByName(other.accessor, 'alice@other'))!.canonical_id;
    expect((await identity.groups.group(elsewhere))!.member_entity_ids).toEqual([otherEntity]);

    const second = (await withGroups(['devs'])).token!.auth;
    expect(second).toMatchObject({ entity_id: entityId, identity_policies: ['dev'] });
    expect((await identity.groups.group(admins))!.member_entity_ids).toEqual([]);
    expect((await identity.groups.group(devs))!.member_entity_ids).toEqual([entityId]);
    expect(await identity.groups.memberships(entityId)).toEqual({ direct: [devs], inherited: [] });

    // The group's policies apply to the token at once, as the entity's do; an internal parent group's too.
    const parent = await identity.groups.upsertGroup({ name: 'engineering', policies: ['eng'], member_group_ids: [devs] });
    expect(await identity.identityPolicies(entityId)).toEqual(['dev', 'eng']);
    expect(await identity.groups.memberships(entityId)).toEqual({ direct: [devs], inherited: [parent.id] });

    expect((await withGroups([])).token!.auth.identity_policies).toBeUndefined();
    expect(await identity.groups.memberships(entityId)).toEqual({ direct: [], inherited: [] });
  });

  it('renews by asking the method with the login\'s auth; takes its TTL and policies; a refusal is the answer', async () => {
    const issued = (await logins.complete(place(), { auth: auth({ ttl: 60 }) })).token!.auth;
    const entry = (await tokens.store.lookup(issued.client_token))!;
    methodAnswer = (message) => ({ ok: true, response: { auth: { ...(message as Extract<EngineRequest, { kind: 'renew-auth' }>).auth, policies: ['reader', 'writer'], ttl: 600 } } });
    const renewed = await logins.renew(entry, 0, 'request-1');
    expect(sent[0]).toMatchObject({ kind: 'renew-auth', mount: { accessor: mount.accessor }, auth: { internalData: { username: 'alice' }, policies: ['reader', 'default'] } });
    expect(renewed).toMatchObject({ policies: ['reader', 'writer', 'default'], ttl: 600 });
    expect((await tokens.store.lookup(issued.client_token))!.login!.auth.policies).toEqual(['reader', 'writer', 'default']);

    methodAnswer = () => ({ ok: false, kind: 'bad-request', errors: ['user "alice" no longer exists'] });
    expect(await refusal(logins.renew(renewed, 0, 'request-2'))).toEqual({ status: 400, message: 'user "alice" no longer exists' });

    await namespace.authMounts.unmount('userpass');
    expect(await refusal(logins.renew(renewed, 0, 'request-3'))).toEqual({ status: 400, message: 'the auth method that issued this token is no longer enabled' });
  });
});
