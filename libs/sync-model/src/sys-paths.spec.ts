import { mountStoragePrefix, type EngineReply } from '@svc/engine-host';
import { Backend, type MountInfo, type Operation, type Response } from '@svc/framework';
import { createView, type Barrier, type StorageView } from '@svc/storage';
import { engineRequest, refusal, testMount, unsealedBarrier, type ResponseData } from '@svc/testing';
import { associationKey, parseDestinationId, SyncRecords } from './model';
import { readEntry, recordSecretChange } from './outbox';
import { syncPaths, type SyncPathsDeps } from './sys-paths';

const CODEHOST = { access_token: 'ghp_secret', repository_owner: 'acme', repository_name: 'app' };
const SYNCED_AT = /^\d{4}-\d\d-\d\dT/;

/** The caller who may read secret/'s secrets (by its token's accessor); no other may. */
const READER = 'reader-accessor';

/**
 * The sync worker as far as these paths can tell: each queued change of a KV mount's outbox is
 * synced (or fails with `failure`) and leaves the queue; a removal removes its association.
 */
class QueueWorker {
  failure?: string;
  /** Leaves what is queued in the queue. */
  paused = false;
  readonly errors: unknown[] = [];

  constructor(
    private readonly root: StorageView,
    private readonly records: SyncRecords,
  ) {}

  follow(barrier: Barrier): void {
    barrier.onWrite(({ key }) => {
      if (key.includes('/sync/queue/') && !this.paused) this.work(key).catch((err: unknown) => this.errors.push(err));
    });
  }

  private async work(key: string): Promise<void> {
    const entry = await readEntry(this.root, key);
    if (!entry) return;
    for (const id of [...entry.targets, ...entry.removals]) {
      const { type, name } = parseDestinationId(id);
      const associations = await this.records.associations(type, name);
      const [associated] = Object.entries(associations).filter(([, association]) => association.secret_name === entry.path && key.startsWith(`logical/${association.mount_uuid}/`));
      if (!associated) continue;
      const remoteNames = Object.fromEntries(Object.keys(entry.data ?? {}).map((subKey) => [subKey, `REMOTE_${subKey}`]));
      await this.records.updateAssociation(type, name, associated[0], (current) => {
        if (!current || entry.removals.includes(id)) return undefined;
        return this.failure
          ? { ...current, sync_status: 'EXTERNAL_SERVICE_ERROR', last_error: this.failure }
          : { ...current, sync_status: 'SYNCED', remote_names: current.granularity === 'secret-key' ? remoteNames : { '': 'REMOTE' } };
      });
    }
    await this.root.delete(key);
  }
}

describe('sys/sync', () => {
  const mount = testMount('system', { path: 'sys/' });
  let backend: Backend;
  let barrier: Barrier;
  let worker: QueueWorker;
  let mounts: Record<'secret' | 'kv1' | 'transit', MountInfo>;
  /** KV version 2 secrets by mount path and name, as the KV engine would read them. */
  let secrets: Map<string, Record<string, unknown>>;
  /** The reads through the KV engine: mount path and path. */
  let readsThrough: [string, string][];
  /** The paths whose read permission was asked. */
  let askedToRead: string[];

  beforeEach(async () => {
    barrier = unsealedBarrier();
    mounts = {
      secret: testMount('kv', { path: 'secret/', options: { version: '2' } }),
      kv1: testMount('kv', { path: 'kv1/', options: { version: '1' } }),
      transit: testMount('transit'),
    };
    secrets = new Map([
      ['secret/app/config', { user: 'admin', password: 'p4ss' }],
      ['secret/db', { url: 'postgres://db' }],
    ]);
    readsThrough = [];
    askedToRead = [];
    const rootView = createView(barrier, '');
    worker = new QueueWorker(rootView, new SyncRecords(rootView));
    worker.follow(barrier);

    const deps: SyncPathsDeps = {
      barrier,
      secretMount: (_req, path) => Object.values(mounts).find((mount) => mount.path === path),
      mayRead: async (req, path) => {
        askedToRead.push(path);
        return req.caller?.tokenAccessor === READER && path.startsWith('secret/data/');
      },
      readThrough: async (_req, mount, path) => {
        readsThrough.push([mount.path, path]);
        return kvRead(mount, path);
      },
    };
    backend = new Backend({ type: 'system', help: 'Sync.', paths: syncPaths(deps) });
  });

  afterEach(() => {
    expect(worker.errors).toEqual([]);
  });

  /** The KV engine's answer to a read of `data/<name>`: 404 for a secret whose versions are all deleted. */
  function kvRead(mount: MountInfo, path: string): EngineReply {
    const name = path.slice('data/'.length);
    if (name === 'deleted') return { ok: true, response: { status: 404, data: { data: null, metadata: { version: 1 } } } };
    if (name === 'sealed') return { ok: false, kind: 'sealed', errors: ['Service is sealed'] };
    const secret = secrets.get(mount.path + name);
    return secret ? { ok: true, response: { data: { data: secret, metadata: { version: 1 } } } } : { ok: false, kind: 'not-found', errors: [] };
  }

  /** A request of the caller whose token has `accessor` (the reader by default). */
  function send(operation: Operation, path: string, data: Record<string, unknown> = {}, accessor: string | null = READER): Promise<Response | undefined> {
    const caller = accessor ? { caller: { tokenAccessor: accessor, policies: [], entityId: '', displayName: '', namespace: '', meta: {} } } : {};
    return backend.handle({ ...engineRequest(mount, operation, path, data), ...caller });
  }
  const data = async (response: Promise<Response | undefined>): Promise<ResponseData | undefined> => (await response)?.data ?? undefined;
  const createCodehost = (name = 'gh', fields: Record<string, unknown> = {}) => send('create', `sync/destinations/codehost/${name}`, { ...CODEHOST, ...fields });
  const associate = (destination: string, secretName: string, accessor?: string | null) => data(send('update', `sync/destinations/${destination}/associations/set`, { mount: 'secret', secret_name: secretName }, accessor));

  describe('destinations', () => {
    it('creates a destination with the defaults of its type, and reads it with credentials masked', async () => {
      const created = await data(createCodehost());
      const expected = {
        name: 'gh',
        type: 'codehost',
        connection_details: { access_token: '*****', repository_owner: 'acme', repository_name: 'app' },
        options: { granularity_level: 'secret-key', secret_name_template: '', custom_tags: {} },
      };
      expect(created).toEqual(expected);
      expect(await data(send('read', 'sync/destinations/codehost/gh'))).toEqual(expected);
      expect(await data(send('create', 'sync/destinations/cloud-sm/aws', { region: 'eu-west-1', granularity: 'secret-key', custom_tags: { team: 'blue' } }))).toEqual({
        name: 'aws',
        type: 'cloud-sm',
        connection_details: { access_key_id: '', secret_access_key: '', region: 'eu-west-1' },
        options: { granularity_level: 'secret-key', secret_name_template: '', custom_tags: { team: 'blue' } },
      });
    });

    it('updates what may change and keeps the options not given', async () => {
      await createCodehost('gh', { secret_name_template: 'APP_{{ .SecretKey }}' });
      // Required fields are required on update too (the framework checks them), so they are sent again.
      expect(await data(send('update', 'sync/destinations/codehost/gh', { ...CODEHOST, access_token: 'ghp_new', granularity: 'secret-path' }))).toEqual({
        name: 'gh',
        type: 'codehost',
        connection_details: { access_token: '*****', repository_owner: 'acme', repository_name: 'app' },
        options: { granularity_level: 'secret-path', secret_name_template: 'APP_{{ .SecretKey }}', custom_tags: {} },
      });
    });

    it('refuses a change of a field naming the external resource, and values its type does not take', async () => {
      await createCodehost();
      expect(await refusal(send('update', 'sync/destinations/codehost/gh', { ...CODEHOST, repository_owner: 'other' }))).toEqual({
        status: 400,
        message: 'field "repository_owner" of a codehost destination cannot be changed after it is created',
      });
      expect(await refusal(send('create', 'sync/destinations/cloudb-kv/az', { key_vault_uri: 'http://vault', client_id: 'c', client_secret: 's', tenant_id: 't' }))).toEqual({
        status: 400,
        message: 'field "key_vault_uri" must be an https URL',
      });
      const vercel = (environments: string) => send('create', 'sync/destinations/webhost-project/web', { access_token: 't', project_id: 'p', deployment_environments: environments });
      expect(await refusal(vercel(''))).toEqual({ status: 400, message: 'field "deployment_environments" must list at least one value' });
      expect(await refusal(vercel('production,staging'))).toEqual({ status: 400, message: 'field "deployment_environments": "staging" is not one of development, preview, production' });
      expect(await refusal(createCodehost('bad', { secret_name_template: '{{ .Nope' }))).toMatchObject({ status: 400, message: expect.stringMatching(/^invalid secret_name_template: /) });
      // A template is tried on an example secret when the destination is written.
      expect(await refusal(createCodehost('bad', { secret_name_template: 'GITHUB_{{ .SecretPath }}' }))).toEqual({ status: 400, message: 'secret name "GITHUB_EXAMPLE" must not start with GITHUB_' });
      expect(await refusal(send('create', 'sync/destinations/codehost/partial', { access_token: 't' }))).toMatchObject({ status: 400, message: expect.stringContaining('repository_owner') });
      expect(await data(send('list', 'sync/destinations/'))).toMatchObject({ total_destinations: 1 });
    });

    it('lists destinations, all of them by type and those of one type', async () => {
      await createCodehost('gh');
      await createCodehost('gh2');
      await send('create', 'sync/destinations/cloud-sm/aws', { region: 'eu-west-1' });
      expect(await data(send('list', 'sync/destinations/'))).toEqual({ keys: ['cloud-sm/', 'codehost/'], key_info: { 'cloud-sm/': ['aws'], 'codehost/': ['gh', 'gh2'] }, total_destinations: 3 });
      expect(await data(send('list', 'sync/destinations/codehost/'))).toEqual({ keys: ['gh', 'gh2'], total_destinations: 2 });
      expect(await data(send('list', 'sync/destinations/cloudc-sm/'))).toEqual({ keys: [], total_destinations: 0 });
    });

    it('deletes a destination once it manages no association; 404 for one that does not exist', async () => {
      await createCodehost();
      await associate('codehost/gh', 'db');
      expect(await refusal(send('delete', 'sync/destinations/codehost/gh'))).toEqual({ status: 400, message: 'destination codehost/gh still manages 1 association(s); remove them first' });
      await send('update', 'sync/destinations/codehost/gh/associations/remove', { mount: 'secret', secret_name: 'db' });
      expect(await send('delete', 'sync/destinations/codehost/gh')).toBeUndefined();
      expect(await refusal(send('read', 'sync/destinations/codehost/gh'))).toEqual({ status: 404, message: 'destination codehost/gh does not exist' });
      expect(await refusal(send('read', 'sync/destinations/codehost/gh/associations'))).toEqual({ status: 404, message: 'destination codehost/gh does not exist' });
    });
  });

  describe('associations', () => {
    it('associates a secret and answers once the worker synced it, one entry per key at key granularity', async () => {
      await createCodehost();
      const set = await associate('codehost/gh', '/app/config/');
      const key = associationKey(mounts.secret.accessor, 'app/config');
      const view = { accessor: mounts.secret.accessor, secret_name: 'app/config', mount: 'secret/', sync_status: 'SYNCED', updated_at: expect.stringMatching(SYNCED_AT), granularity: 'secret-key' };
      expect(set).toEqual({
        associated_secrets: { [key]: view, [`${key}/user`]: { ...view, sub_key: 'user' }, [`${key}/password`]: { ...view, sub_key: 'password' } },
        store_name: 'gh',
        store_type: 'codehost',
      });
      expect(await data(send('read', 'sync/destinations/codehost/gh/associations'))).toEqual(set);
      // The secret is read as root through the KV engine, after the caller's own capability was checked.
      expect(askedToRead).toEqual(['secret/data/app/config']);
      expect(readsThrough).toEqual([
        ['secret/', 'data/app/config'],
        ['secret/', 'data/app/config'],
      ]);
    });

    it('shows the error of a sync that failed', async () => {
      await send('create', 'sync/destinations/cloud-sm/aws', { region: 'eu-west-1' });
      worker.failure = 'the provider said no';
      const set = await associate('cloud-sm/aws', 'db');
      expect(set?.associated_secrets).toEqual({
        [associationKey(mounts.secret.accessor, 'db')]: expect.objectContaining({ sync_status: 'EXTERNAL_SERVICE_ERROR', error: 'the provider said no', granularity: 'secret-path' }),
      });
    });

    it('refuses a secret it cannot sync: no destination, no KV version 2 mount, no secret, no name', async () => {
      await createCodehost();
      const setIn = (fields: Record<string, unknown>, destination = 'codehost/gh') => refusal(send('update', `sync/destinations/${destination}/associations/set`, fields));
      expect(await setIn({ mount: 'secret', secret_name: 'db' }, 'codehost/none')).toEqual({ status: 404, message: 'destination codehost/none does not exist' });
      expect(await setIn({ mount: 'secret', secret_name: '/' })).toEqual({ status: 400, message: 'field "secret_name" must name a secret' });
      expect(await setIn({ mount: 'nothing', secret_name: 'db' })).toEqual({ status: 400, message: 'no mount at "nothing/"' });
      expect(await setIn({ mount: 'kv1', secret_name: 'db' })).toEqual({ status: 400, message: 'mount "kv1/" is not a KV version 2 mount; only KV version 2 secrets can be synced' });
      expect(await setIn({ mount: 'transit/', secret_name: 'db' })).toEqual({ status: 400, message: 'mount "transit/" is not a KV version 2 mount; only KV version 2 secrets can be synced' });
      const notFound = { status: 400, message: 'Secret not found. Please provide full path to existing secret' };
      expect(await setIn({ mount: 'secret', secret_name: 'missing' })).toEqual(notFound);
      expect(await setIn({ mount: 'secret', secret_name: 'deleted' })).toEqual(notFound);
      expect(await setIn({ mount: 'secret', secret_name: 'sealed' })).toEqual({ status: 503, message: 'Service is sealed' });
      expect(await setIn({ mount: 'secret' })).toEqual({ status: 400, message: 'missing required field "secret_name"' });
      expect(await data(send('list', 'sync/associations/'))).toMatchObject({ total_associations: 0 });
    });

    it('refuses a caller who may not read the secret', async () => {
      await createCodehost();
      const denied = { status: 403, message: 'permission denied to read the content of the secret db in mount secret/' };
      expect(await refusal(associate('codehost/gh', 'db', null))).toEqual(denied);
      expect(await refusal(associate('codehost/gh', 'db', 'other-accessor'))).toEqual(denied);
      expect(readsThrough).toEqual([]);
    });

    it('refuses a secret whose provider name breaks the rules of the destination', async () => {
      await createCodehost('gh', { secret_name_template: '{{ .SecretPath }}' });
      secrets.set('secret/1db', { url: 'postgres://db' });
      expect(await refusal(associate('codehost/gh', '1db'))).toEqual({ status: 400, message: 'secret name "1DB" must not start with a digit' });
      expect(await data(send('read', 'sync/destinations/codehost/gh/associations'))).toMatchObject({ associated_secrets: {} });
    });

    it('removes an association, answering it unsynced; removing one that does not exist answers the same', async () => {
      await createCodehost();
      await associate('codehost/gh', 'db');
      const key = associationKey(mounts.secret.accessor, 'db');
      const removed = await data(send('update', 'sync/destinations/codehost/gh/associations/remove', { mount: 'secret', secret_name: 'db' }));
      expect(removed).toEqual({
        associated_secrets: { [key]: { accessor: mounts.secret.accessor, secret_name: 'db', mount: 'secret/', sync_status: 'UNSYNCED', updated_at: expect.stringMatching(SYNCED_AT), granularity: 'secret-key' } },
        store_name: 'gh',
        store_type: 'codehost',
      });
      expect(await data(send('read', 'sync/destinations/codehost/gh/associations'))).toMatchObject({ associated_secrets: {} });
      expect(await data(send('update', 'sync/destinations/codehost/gh/associations/remove', { mount: 'secret', secret_name: 'db' }))).toEqual({
        ...removed,
        associated_secrets: { [key]: { ...removed?.associated_secrets[key], updated_at: expect.stringMatching(SYNCED_AT) } },
      });
      expect(await refusal(send('update', 'sync/destinations/codehost/none/associations/remove', { mount: 'secret', secret_name: 'db' }))).toEqual({ status: 404, message: 'destination codehost/none does not exist' });
    });

    it('lists every associated secret, and the destinations of one secret', async () => {
      await createCodehost();
      await send('create', 'sync/destinations/cloud-sm/aws', { region: 'eu-west-1' });
      await associate('codehost/gh', 'app/config');
      await associate('cloud-sm/aws', 'app/config');
      await associate('cloud-sm/aws', 'db');
      expect(await data(send('list', 'sync/associations/'))).toEqual({
        keys: ['secret/app/config', 'secret/db'],
        key_info: {
          'secret/app/config': [
            { mount: 'secret/', secret_path: 'app/config', type: 'cloud-sm', name: 'aws' },
            { mount: 'secret/', secret_path: 'app/config', type: 'codehost', name: 'gh' },
          ],
          'secret/db': [{ mount: 'secret/', secret_path: 'db', type: 'cloud-sm', name: 'aws' }],
        },
        total_associations: 3,
        total_secrets: 2,
      });

      const synced = { sync_status: 'SYNCED', updated_at: expect.stringMatching(SYNCED_AT) };
      const ofConfig = { associated_destinations: { 'cloud-sm/aws': { type: 'cloud-sm', name: 'aws', ...synced }, 'codehost/gh': { type: 'codehost', name: 'gh', ...synced } } };
      expect(await data(send('read', 'sync/associations/secret/app/config'))).toEqual(ofConfig);
      expect(await data(send('read', 'sync/associations/destinations', { mount: 'secret/', secret_name: 'app/config' }))).toEqual(ofConfig);
      expect(await data(send('read', 'sync/associations/nothing/app/config'))).toEqual({ associated_destinations: {} });
    });

    it('reads a synced secret as pending while a later change of it waits in the queue', async () => {
      await createCodehost();
      await associate('codehost/gh', 'db');
      worker.paused = true;
      // What the KV engine does in the transaction of a write.
      await createView(barrier, mountStoragePrefix(mounts.secret)).transaction((tx) => recordSecretChange(tx, 'db', async () => ({ url: 'postgres://other' })));
      expect(await data(send('read', 'sync/associations/secret/db'))).toMatchObject({ associated_destinations: { 'codehost/gh': { sync_status: 'PENDING' } } });
      expect(await data(send('read', 'sync/destinations/codehost/gh/associations'))).toMatchObject({
        associated_secrets: { [associationKey(mounts.secret.accessor, 'db')]: { sync_status: 'PENDING' } },
      });
    });

    it('refuses the destinations of a secret without its mount or name', async () => {
      expect(await refusal(send('read', 'sync/associations/destinations', { secret_name: 'db' }))).toEqual({ status: 400, message: 'missing required field "mount"' });
      expect(await refusal(send('read', 'sync/associations/destinations', { mount: 'secret' }))).toEqual({ status: 400, message: 'missing required field "secret_name"' });
    });
  });
});
