import { InmemPhysical, Keyring } from '@svc/storage';
import { MountedBackend, mountStorage, refusal, testMount } from '@svc/testing';
import { createIdentityBackend } from './identity-backend';
import { IdentityStore } from './identity-store';

describe('identity backend', () => {
  const userpass = testMount('userpass');
  const approle = testMount('approle');
  let identity: MountedBackend;
  let store: IdentityStore;

  beforeEach(() => {
    const mount = testMount('identity');
    const storage = mountStorage(mount);
    store = new IdentityStore(storage);
    const authMounts = [userpass, approle];
    const backend = createIdentityBackend({ store, namespaceId: 'root', authMount: (accessor) => authMounts.find((auth) => auth.accessor === accessor) });
    identity = new MountedBackend(backend, mount, storage);
  });

  it('creates, reads, lists, updates and deletes entities by id and by name', async () => {
    const created = await identity.write('entity', { name: 'alice', metadata: { team: 'blue' }, policies: 'reader, writer' });
    expect(created).toEqual({ id: expect.any(String), name: 'alice' });
    const read = await identity.read(`entity/id/${created.id}`);
    expect(read).toEqual({
      id: created.id,
      name: 'alice',
      metadata: { team: 'blue' },
      policies: ['reader', 'writer'],
      disabled: false,
      aliases: [],
      direct_group_ids: [],
      group_ids: [],
      inherited_group_ids: [],
      merged_entity_ids: null,
      creation_time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      last_update_time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      namespace_id: 'root',
    });
    expect(await identity.read('entity/name/alice')).toEqual(read);

    // identity/entity with an existing name updates that entity, as in Vault.
    expect(await identity.write('entity', { name: 'alice', disabled: true })).toEqual({ id: created.id, name: 'alice' });
    expect(await identity.read(`entity/id/${created.id}`)).toMatchObject({ disabled: true, policies: ['reader', 'writer'] });
    await identity.write(`entity/id/${created.id}`, { name: 'alicia', disabled: false });
    expect(await identity.read('entity/name/alice')).toBeUndefined();
    expect(await identity.read('entity/name/alicia')).toMatchObject({ id: created.id, disabled: false });
    await identity.write('entity/name/bob', { policies: ['ops'] });

    const byId = await identity.request('list', 'entity/id/');
    expect(byId?.data?.key_info).toEqual({ [created.id]: { name: 'alicia' }, [(await identity.read('entity/name/bob'))!.id]: { name: 'bob' } });
    expect(await identity.list('entity/name/')).toEqual(['alicia', 'bob']);

    await identity.request('delete', 'entity/name/bob');
    await identity.request('delete', `entity/id/${created.id}`);
    expect(await identity.list('entity/name/')).toEqual([]);
    expect(await identity.list('entity/id/')).toEqual([]);
  });

  it('refuses a second entity of one name and updates of entities that do not exist', async () => {
    await identity.write('entity', { name: 'alice' });
    const { id } = await identity.write('entity', { name: 'bob' });
    expect(await refusal(identity.write(`entity/id/${id}`, { name: 'alice' }))).toEqual({ status: 400, message: 'field "name": an entity named "alice" already exists' });
    expect(await refusal(identity.write('entity/id/nope', { policies: 'x' }))).toEqual({ status: 400, message: 'entity "nope" does not exist' });
    expect((await refusal(identity.write('entity', { disabled: 'maybe' }))).status).toBe(400);
  });

  it('creates aliases, shows them on their entity, and keeps them unique per mount', async () => {
    const { id: entityId } = await identity.write('entity', { name: 'alice' });
    const alias = await identity.write('entity-alias', { name: 'alice', mount_accessor: userpass.accessor, canonical_id: entityId, custom_metadata: { desk: '4' } });
    expect(alias).toEqual({ id: expect.any(String), canonical_id: entityId });
    const shown = {
      id: alias.id,
      name: 'alice',
      canonical_id: entityId,
      mount_accessor: userpass.accessor,
      mount_path: 'auth/userpass/',
      mount_type: 'userpass',
      metadata: {},
      custom_metadata: { desk: '4' },
      creation_time: expect.any(String),
      last_update_time: expect.any(String),
      merged_from_canonical_ids: null,
      namespace_id: 'root',
      local: false,
    };
    expect(await identity.read(`entity-alias/id/${alias.id}`)).toEqual(shown);
    expect((await identity.read(`entity/id/${entityId}`))!.aliases).toEqual([shown]);
    expect((await identity.request('list', 'entity-alias/id/'))?.data).toEqual({
      keys: [alias.id],
      key_info: { [alias.id]: { canonical_id: entityId, mount_accessor: userpass.accessor, mount_path: 'auth/userpass/', mount_type: 'userpass', name: 'alice' } },
    });

    const { id: otherId } = await identity.write('entity', { name: 'other' });
    expect(await refusal(identity.write('entity-alias', { name: 'alice', mount_accessor: userpass.accessor, canonical_id: otherId }))).toEqual({
      status: 400,
      message: `an alias named "alice" already exists for mount accessor "${userpass.accessor}"`,
    });
    expect(await refusal(identity.write('entity-alias', { name: 'alice2', mount_accessor: userpass.accessor, canonical_id: entityId }))).toEqual({
      status: 400,
      message: `entity "${entityId}" already has an alias for mount accessor "${userpass.accessor}"`,
    });

    // An alias moves to another entity; without a canonical id an alias gets a new entity.
    await identity.write(`entity-alias/id/${alias.id}`, { canonical_id: otherId });
    expect((await identity.read(`entity/id/${entityId}`))!.aliases).toEqual([]);
    expect((await identity.read(`entity/id/${otherId}`))!.aliases).toMatchObject([{ id: alias.id }]);
    const lone = await identity.write('entity-alias', { name: 'robot', mount_accessor: approle.accessor });
    expect((await identity.read(`entity/id/${lone.canonical_id}`))!.name).toBe(`entity_${lone.canonical_id}`);

    await identity.request('delete', `entity-alias/id/${lone.id}`);
    expect(await identity.read(`entity-alias/id/${lone.id}`)).toBeUndefined();
    expect((await identity.read(`entity/id/${lone.canonical_id}`))!.aliases).toEqual([]);
  });

  it('answers bad alias input with a 400 naming the field', async () => {
    const { id: entityId } = await identity.write('entity', { name: 'alice' });
    expect(await refusal(identity.write('entity-alias', { mount_accessor: userpass.accessor, canonical_id: entityId }))).toEqual({ status: 400, message: 'missing required field "name"' });
    expect(await refusal(identity.write('entity-alias', { name: 'a', canonical_id: entityId }))).toEqual({ status: 400, message: 'missing required field "mount_accessor"' });
    expect(await refusal(identity.write('entity-alias', { name: 'a', mount_accessor: 'userpass_nope' }))).toEqual({ status: 400, message: 'field "mount_accessor": no auth mount has accessor "userpass_nope"' });
    expect(await refusal(identity.write('entity-alias', { name: 'a', mount_accessor: userpass.accessor, canonical_id: 'nope' }))).toEqual({ status: 400, message: 'field "canonical_id": entity "nope" does not exist' });
    expect(await refusal(identity.write('entity-alias/id/nope', { name: 'b' }))).toEqual({ status: 400, message: 'entity alias "nope" does not exist' });
  });

  it('deleting an entity deletes its aliases', async () => {
    const { id: entityId } = await identity.write('entity', { name: 'alice' });
    const alias = await identity.write('entity-alias', { name: 'alice', mount_accessor: userpass.accessor, canonical_id: entityId });
    await identity.request('delete', `entity/id/${entityId}`);
    expect(await identity.read(`entity-alias/id/${alias.id}`)).toBeUndefined();
    // The alias name is free again.
    expect(await identity.write('entity-alias', { name: 'alice', mount_accessor: userpass.accessor })).toEqual({ id: expect.any(String), canonical_id: expect.any(String) });
  });

  it('looks entities up by id, name, alias id, or alias name and mount accessor', async () => {
    const { id: entityId } = await identity.write('entity', { name: 'alice' });
    const alias = await identity.write('entity-alias', { name: 'al', mount_accessor: userpass.accessor, canonical_id: entityId });
    for (const by of [{ id: entityId }, { name: 'alice' }, { alias_id: alias.id }, { alias_name: 'al', alias_mount_accessor: userpass.accessor }]) {
      expect(await identity.write('lookup/entity', by)).toMatchObject({ id: entityId, name: 'alice', aliases: [{ id: alias.id }] });
    }
    expect(await identity.request('update', 'lookup/entity', { name: 'nobody' })).toBeUndefined();
    expect((await refusal(identity.write('lookup/entity', {}))).status).toBe(400);
    expect((await refusal(identity.write('lookup/entity', { id: entityId, name: 'alice' }))).status).toBe(400);
    expect(await refusal(identity.write('lookup/entity', { alias_name: 'al' }))).toEqual({ status: 400, message: 'missing required field "alias_mount_accessor" (with "alias_name")' });
  });

  it('finds or creates the entity of a login, once, even when logins race on two replicas', async () => {
    const physical = new InmemPhysical();
    const keyring = Keyring.generate();
    const mount = testMount('identity');
    const replicas = [new IdentityStore(mountStorage(mount, physical, keyring)), new IdentityStore(mountStorage(mount, physical, keyring))];
    const entities = await Promise.all(Array.from({ length: 8 }, (_, i) => replicas[i % 2].loginEntity(userpass.accessor, 'alice', { username: 'alice' })));
    expect(new Set(entities.map((entity) => entity.id)).size).toBe(1);
    expect(entities[0].name).toBe(`entity_${entities[0].id}`);
    expect(await replicas[0].entityIds()).toEqual([entities[0].id]);

    const relogged = await replicas[1].loginEntity(userpass.accessor, 'alice', { username: 'alice', extra: 'x' });
    expect(relogged.id).toBe(entities[0].id);
    expect((await replicas[0].aliasByName(userpass.accessor, 'alice'))!.metadata).toEqual({ username: 'alice', extra: 'x' });
  });
});
