import { MountedBackend, mountStorage, refusal, testMount } from '@svc/testing';
import { createIdentityBackend } from './identity-backend';
import { IdentityStore } from './identity-store';

describe('identity groups and group aliases', () => {
  const oidc = testMount('oidc');
  let identity: MountedBackend;
  let store: IdentityStore;

  beforeEach(() => {
    const mount = testMount('identity');
    const storage = mountStorage(mount);
    store = new IdentityStore(storage);
    const backend = createIdentityBackend({ store, namespaceId: 'root', authMount: (accessor) => (accessor === oidc.accessor ? oidc : undefined) });
    identity = new MountedBackend(backend, mount, storage);
  });

  const entity = async (name: string) => (await identity.write('entity', { name })).id as string;
  const refused = (path: string, data: Record<string, unknown>) => refusal(identity.write(path, data));

  it('creates, reads, lists, renames and deletes internal groups; members see their groups', async () => {
    const alice = await entity('alice');
    const bob = await entity('bob');
    const created = await identity.write('group', { name: 'devs', policies: 'dev, Deploy', metadata: { team: 'blue' }, member_entity_ids: [alice, bob] });
    expect(created).toEqual({ id: expect.any(String), name: 'devs' });
    const read = await identity.read(`group/id/${created.id}`);
    expect(read).toEqual({
      id: created.id,
      name: 'devs',
      type: 'internal',
      policies: ['dev', 'Deploy'],
      metadata: { team: 'blue' },
      member_entity_ids: [alice, bob],
      member_group_ids: [],
      parent_group_ids: [],
      alias: {},
      creation_time: expect.stringMatching(/^\d{4}-/),
      last_update_time: expect.stringMatching(/^\d{4}-/),
      namespace_id: 'root',
    });
    expect(await identity.read('group/name/devs')).toEqual(read);
    const parent = await identity.write('group/name/engineering', { policies: 'eng', member_group_ids: created.id });
    expect(await identity.read(`group/id/${created.id}`)).toMatchObject({ parent_group_ids: [parent.id] });
    expect(await identity.read(`entity/id/${alice}`)).toMatchObject({ direct_group_ids: [created.id], inherited_group_ids: [parent.id], group_ids: [created.id, parent.id] });
    expect(await store.identityPolicies(alice)).toEqual(['dev', 'Deploy', 'eng']);

    const list = await identity.request('list', 'group/id/');
    expect(list?.data?.key_info).toMatchObject({ [created.id]: { name: 'devs', num_member_entities: 2 } });
    expect(await identity.list('group/name/')).toEqual(['devs', 'engineering']);

    // Membership lists are replaced whole; a removed member loses the group's policies.
    await identity.write(`group/id/${created.id}`, { name: 'developers', member_entity_ids: [bob] });
    expect(await identity.read('group/name/devs')).toBeUndefined();
    expect(await identity.read(`entity/id/${alice}`)).toMatchObject({ direct_group_ids: [], group_ids: [] });
    expect(await store.identityPolicies(alice)).toEqual([]);

    // Deleting an entity takes it out of its groups; deleting a group out of its parents.
    await identity.request('delete', `entity/id/${bob}`);
    expect(await identity.read('group/name/developers')).toMatchObject({ member_entity_ids: [] });
    await identity.request('delete', 'group/name/developers');
    expect(await identity.read(`group/id/${parent.id}`)).toMatchObject({ member_group_ids: [] });
    expect(await identity.list('group/name/')).toEqual(['engineering']);
  });

  it('refuses bad groups: cycles, unknown members, members of external groups, a changed type, a taken name', async () => {
    const devs = (await identity.write('group', { name: 'devs' })).id;
    const all = (await identity.write('group', { name: 'all', member_group_ids: [devs] })).id;
    expect(await refused(`group/id/${devs}`, { member_group_ids: [all] })).toEqual({ status: 400, message: `field "member_group_ids": group "${all}" would make the group a member of itself` });
    expect(await refused(`group/id/${devs}`, { member_group_ids: [devs] })).toMatchObject({ status: 400 });
    expect(await refused('group', { name: 'x', member_entity_ids: ['nobody'] })).toEqual({ status: 400, message: 'entity "nobody" does not exist' });
    expect(await refused('group', { name: 'x', member_group_ids: ['nothing'] })).toEqual({ status: 400, message: 'group "nothing" does not exist' });
    expect(await identity.read('group/name/x')).toBeUndefined();
    expect(await refused('group', { name: 'ext', type: 'external', member_entity_ids: [await entity('carol')] })).toMatchObject({ status: 400, message: expect.stringContaining('external group') });
    expect(await refused(`group/id/${devs}`, { type: 'external' })).toEqual({ status: 400, message: 'field "type": a group\'s type cannot change (it is "internal")' });
    expect(await refused('group', { name: 'y', type: 'other' })).toMatchObject({ status: 400, message: expect.stringContaining('type') });
    expect(await refused(`group/id/${devs}`, { name: 'all' })).toEqual({ status: 400, message: 'field "name": a group named "all" already exists' });
    expect(await refused('group/id/missing', { policies: 'x' })).toEqual({ status: 400, message: 'group "missing" does not exist' });
  });

  it('gives an external group one alias on an auth mount, found by lookup', async () => {
    const admins = (await identity.write('group', { name: 'admins', type: 'external', policies: 'admin' })).id;
    const internal = (await identity.write('group', { name: 'internal' })).id;
    const alias = await identity.write('group-alias', { name: 'Admins@idp', mount_accessor: oidc.accessor, canonical_id: admins });
    expect(alias).toEqual({ id: expect.any(String), canonical_id: admins });
    expect(await identity.read(`group-alias/id/${alias.id}`)).toMatchObject({ name: 'Admins@idp', mount_accessor: oidc.accessor, mount_path: `auth/${oidc.path}`, mount_type: 'oidc', canonical_id: admins });
    expect(await identity.read(`group/id/${admins}`)).toMatchObject({ type: 'external', alias: { id: alias.id, name: 'Admins@idp' } });
    expect(await identity.list('group-alias/id/')).toEqual([alias.id]);

    expect(await identity.write('lookup/group', { alias_name: 'Admins@idp', alias_mount_accessor: oidc.accessor })).toMatchObject({ id: admins });
    expect(await identity.write('lookup/group', { name: 'admins' })).toMatchObject({ id: admins });
    expect(await refused('lookup/group', { name: 'admins', id: admins })).toMatchObject({ status: 400 });

    expect(await refused('group-alias', { name: 'x', mount_accessor: oidc.accessor, canonical_id: internal })).toEqual({ status: 400, message: `field "canonical_id": group "${internal}" is internal; only external groups have aliases` });
    expect(await refused('group-alias', { name: 'second', mount_accessor: oidc.accessor, canonical_id: admins })).toEqual({ status: 400, message: `field "canonical_id": group "${admins}" already has an alias` });
    expect(await refused('group-alias', { name: 'x', mount_accessor: 'auth_nope', canonical_id: admins })).toEqual({ status: 400, message: 'field "mount_accessor": no auth mount has accessor "auth_nope"' });
    expect(await refused('group-alias', { mount_accessor: oidc.accessor, canonical_id: admins })).toEqual({ status: 400, message: 'missing required field "name"' });
    expect(await refused('group-alias', { name: 'x', mount_accessor: oidc.accessor })).toEqual({ status: 400, message: 'missing required field "canonical_id"' });

    await identity.write(`group-alias/id/${alias.id}`, { name: 'admins@idp' });
    expect(await identity.write('lookup/group', { alias_name: 'admins@idp', alias_mount_accessor: oidc.accessor })).toMatchObject({ id: admins });
    await identity.request('delete', `group/id/${admins}`);
    expect(await identity.read(`group-alias/id/${alias.id}`)).toBeUndefined();
    expect(await identity.list('group-alias/id/')).toEqual([]);
  });
});
