/**
 * The cloud-credential engine driven in process as the engine host drives it, against the IAM +
 * STS emulator: its background work (the core calls `periodic` about once a minute; here the test
 * calls it, with the clock moved on): the write-ahead rollback of a user whose creation and
 * rollback both failed, static-role rotation when the period has passed; and a name collision,
 * which must not remove the user that holds the name.
 */
import { CloudBackend } from '@svc/engine-cloud';
import type { MountInfo, Request } from '@svc/framework';
import { MemoryLockManager } from '@svc/locks';
import { CachedPhysical, InmemPhysical, Keyring, type StorageView } from '@svc/storage';
import { engineContext, engineRequest, mountStorage, testMount } from '@svc/testing';
import { startIamStsEmulator, type IamStsEmulator } from './emulators/aws/iam-sts';

const READ_ONLY = 'arn:aws:iam::aws:policy/ReadOnlyAccess';

describe('cloud-credential engine, in process', () => {
  let emulator: IamStsEmulator;
  let mount: MountInfo;
  let storage: StorageView;
  let backend: CloudBackend;
  let rootConfig: Record<string, unknown>;

  beforeEach(async () => {
    emulator = await startIamStsEmulator();
    emulator.state.createUser('svc-root');
    emulator.state.createPolicy(READ_ONLY);
    const key = emulator.state.createAccessKey('svc-root');
    mount = testMount('cloud');
    storage = mountStorage(mount);
    backend = new CloudBackend(mount, engineContext({ storage }));
    rootConfig = { access_key: key.id, secret_key: key.secret, iam_endpoint: emulator.url, sts_endpoint: emulator.url, max_retries: 0 };
    await handle('update', 'config/root', rootConfig);
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await backend.cleanup();
    await emulator.close();
  });

  function request(operation: Request['operation'], path: string, data: Record<string, unknown> = {}): Request {
    return { ...engineRequest(mount, operation, path, data), caller: { tokenAccessor: 'a', policies: ['root'], entityId: '', displayName: 'root', namespace: '', meta: {} } };
  }

  function handle(operation: Request['operation'], path: string, data: Record<string, unknown> = {}, on: CloudBackend = backend) {
    return on.handle(request(operation, path, data));
  }

  /** Runs the periodic work (of `on`, by default the test's backend) as if `minutes` had passed. */
  async function periodicAfter(minutes: number, on: CloudBackend = backend): Promise<void> {
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now + minutes * 60_000);
    try {
      await on.periodic();
    } finally {
      clock.mockRestore();
    }
  }

  function managedUsers(): string[] {
    return [...emulator.state.users.keys()].filter((name) => name !== 'svc-root');
  }

  test('a user whose creation and rollback both failed is removed by the periodic rollback once its record is five minutes old', async () => {
    await handle('create', 'roles/tagged', { credential_type: 'iam_user', policy_arns: READ_ONLY, iam_tags: ['env=test'] });
    emulator.failNext('TagUser', { status: 400, code: 'InvalidInput', message: 'tag value rejected' });
    // The rollback's first call fails too: the provider went away mid-request.
    emulator.failNext('ListGroupsForUser', { status: 503, code: 'ServiceUnavailable', message: 'down' });
    await expect(handle('read', 'creds/tagged')).rejects.toMatchObject({ kind: 'bad-request', errors: ['create user: InvalidInput: tag value rejected'] });
    const [halfMade] = managedUsers();
    expect([...emulator.state.user(halfMade).attachedPolicies]).toEqual([READ_ONLY]);

    // Too young: its creation might still be running on another replica.
    await periodicAfter(1);
    expect(managedUsers()).toEqual([halfMade]);
    await periodicAfter(6);
    expect(managedUsers()).toEqual([]);
    // The record is gone with the user: nothing is retried.
    emulator.state.calls.length = 0;
    await periodicAfter(12);
    expect(emulator.state.calls).toEqual([]);
  });

  test('a username that is taken is a 400, and the user holding it keeps everything', async () => {
    await handle('update', 'config/root', { ...rootConfig, username_template: 'svc-fixed-{{.PolicyName}}' });
    await handle('create', 'roles/fixed', { credential_type: 'iam_user', policy_arns: READ_ONLY });
    const first = await handle('read', 'creds/fixed');
    expect(first?.data?.arn).toBe('arn:aws:iam::123456789012:user/svc-fixed-fixed');
    await expect(handle('read', 'creds/fixed')).rejects.toMatchObject({ kind: 'bad-request', errors: ['create user: EntityAlreadyExists: User with name svc-fixed-fixed already exists.'] });
    expect(emulator.state.keysOf('svc-fixed-fixed').map((key) => key.id)).toEqual([first?.data?.access_key]);
    // Nor does the periodic rollback take it later.
    await periodicAfter(10);
    expect(emulator.state.keysOf('svc-fixed-fixed').map((key) => key.id)).toEqual([first?.data?.access_key]);
    expect([...emulator.state.user('svc-fixed-fixed').attachedPolicies]).toEqual([READ_ONLY]);
  });

  test('a static role rotates when its period has passed, the oldest key first; a new period counts from when it was written', async () => {
    emulator.state.createUser('deployer');
    await handle('create', 'static-roles/deployer', { username: 'deployer', rotation_period: '10m' });
    const first = (await handle('read', 'static-creds/deployer'))!.data!.access_key;
    emulator.state.createAccessKey('deployer'); // someone else's key: now at IAM's limit of two

    await periodicAfter(5);
    expect((await handle('read', 'static-creds/deployer'))!.data!.access_key).toBe(first);
    await periodicAfter(11);
    const second = (await handle('read', 'static-creds/deployer'))!.data!.access_key;
    expect(second).not.toBe(first);
    const keys = emulator.state.keysOf('deployer').map((key) => key.id);
    expect(keys).toHaveLength(2);
    expect(keys).not.toContain(first);

    // Written now with a one-hour period: the next rotation is an hour from now, not from the last one.
    await handle('update', 'static-roles/deployer', { rotation_period: '1h' });
    await periodicAfter(30);
    expect((await handle('read', 'static-creds/deployer'))!.data!.access_key).toBe(second);
    await periodicAfter(61);
    expect((await handle('read', 'static-creds/deployer'))!.data!.access_key).not.toBe(second);
  });

  test('two gateway workers, each reading through its own cache of one store, rotate a due static role once and agree on its key', async () => {
    const shared = new InmemPhysical();
    const keyring = Keyring.generate();
    const locks = new MemoryLockManager();
    const workers = [0, 1].map(() => new CloudBackend(mount, engineContext({ storage: mountStorage(mount, new CachedPhysical(shared), keyring), locks })));
    try {
      emulator.state.createUser('deployer');
      await handle('update', 'config/root', rootConfig, workers[0]);
      await handle('create', 'static-roles/deployer', { username: 'deployer', rotation_period: '10m' }, workers[0]);
      // The second worker caches the role as created.
      const first = (await handle('read', 'static-creds/deployer', {}, workers[1]))!.data!.access_key;
      const created = () => emulator.state.calls.filter((action) => action === 'CreateAccessKey').length;
      expect(created()).toBe(1);

      await periodicAfter(11, workers[0]);
      await periodicAfter(11, workers[1]);
      expect(created()).toBe(2);
      const [current] = emulator.state.keysOf('deployer').map((key) => key.id).filter((id) => id !== first);
      // A new period through the second worker keeps the key the first one rotated to.
      await handle('update', 'static-roles/deployer', { rotation_period: '1h' }, workers[1]);
      expect((await handle('read', 'static-creds/deployer', {}, workers[0]))!.data!.access_key).toBe(current);
    } finally {
      await Promise.all(workers.map((worker) => worker.cleanup()));
    }
  });
});
