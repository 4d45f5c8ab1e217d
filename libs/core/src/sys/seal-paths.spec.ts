import { Backend, type Operation } from '@svc/framework';
import { VERSION } from '@svc/api-contract';
import type { SealStatus } from '@svc/seal';
import { type Barrier, Keyring } from '@svc/storage';
import { MountedBackend, mountStorage, refusal, testMount, unsealedBarrier } from '@svc/testing';
import type { CoreState, InitAnswer, InitRequest } from '../seal/seal-lifecycle';
import { sealPaths, type SealPathsDeps } from './seal-paths';

type Body = Record<string, unknown>;

const INIT_ANSWER: InitAnswer = { keys: ['aa', 'bb', 'cc'], keys_base64: ['qg==', 'uw==', 'zA=='], root_token: 'svs.root' };

type SealState = SealPathsDeps['seal'];

/** The seal lifecycle as the paths see it; its calls are recorded, a share unseals at once. */
class FakeSealLifecycle implements SealState {
  state: CoreState = 'uninitialized';
  activeSince?: Date;
  readonly calls: unknown[][] = [];
  /**
   * The seal's own status says sealed: a replica that followed a peer's unseal holds the keyring
   * without its seal object having opened, so the lifecycle's state is what the paths report.
   */
  readonly seal = {
    recoverySeal: false,
    status: async (): Promise<SealStatus> => ({
      type: 'shamir',
      initialized: true,
      sealed: true,
      t: 2,
      n: 3,
      progress: 1,
      nonce: 'unseal-nonce',
      version: VERSION,
      build_date: '2025-01-01T00:00:00Z',
      migration: false,
      recovery_seal: false,
      storage_type: 'inmem',
    }),
  };

  async initialize(request: InitRequest): Promise<InitAnswer> {
    this.calls.push(['initialize', request]);
    this.state = 'sealed';
    return INIT_ANSWER;
  }

  async submitUnsealKey(key: string | undefined, reset: boolean, migrate?: boolean): Promise<void> {
    this.calls.push(['submitUnsealKey', key, reset, migrate]);
    if (key) this.state = 'unsealed';
  }

  async sealNow(): Promise<void> {
    this.calls.push(['sealNow']);
    this.state = 'sealed';
  }

  async rotateKeyring(): Promise<Keyring> {
    this.calls.push(['rotateKeyring']);
    return Keyring.generate();
  }
}

describe('sys/ seal paths', () => {
  let lifecycle: FakeSealLifecycle;
  let barrier: Barrier;
  let deps: SealPathsDeps;
  let replication: { modes: () => { performance: string; dr: string }; isDrSecondary: boolean };
  let replicas: { inContact: boolean };
  let stepDowns: number;
  let sys: MountedBackend;

  const respond = (operation: Operation, path: string, data: Body = {}) => sys.request(operation, path, data);
  /** The raw body of an answer, as the client receives it (not in an envelope). */
  const raw = async (operation: Operation, path: string, data: Body = {}) => (await respond(operation, path, data))?.raw as Body | undefined;

  beforeEach(() => {
    lifecycle = new FakeSealLifecycle();
    barrier = unsealedBarrier({ keyring: Keyring.generate(new Date('2025-01-02T03:04:05.000Z')) });
    stepDowns = 0;
    replication = { modes: () => ({ performance: 'disabled', dr: 'primary' }), isDrSecondary: false };
    replicas = { inContact: true };
    deps = {
      seal: lifecycle,
      barrier,
      replication,
      replicas,
      clusterIdentity: { name: 'svc-cluster-test', id: 'cluster-id-1' },
      bus: { kind: 'memory' },
      config: { apiAddr: 'https://gw.example:8200', clusterAddr: 'https://gw.example:8201' },
      leases: { stepDown: async () => void stepDowns++ },
    };
    const mount = testMount('system', { path: 'sys/' });
    sys = new MountedBackend(new Backend({ type: 'system', help: 'Seal.', paths: sealPaths(deps) }), mount, mountStorage(mount));
  });

  describe('sys/init', () => {
    it('tells whether the service is initialized', async () => {
      expect(await raw('read', 'init')).toEqual({ initialized: false });
      lifecycle.state = 'sealed';
      expect(await raw('read', 'init')).toEqual({ initialized: true });
    });

    it("initializes with the request's settings and answers the shares and root token", async () => {
      expect(await raw('update', 'init', { secret_shares: 3, secret_threshold: 2, root_token_pgp_key: '' })).toEqual(INIT_ANSWER);
      expect(lifecycle.calls).toEqual([
        [
          'initialize',
          { secret_shares: 3, secret_threshold: 2, pgp_keys: undefined, recovery_shares: undefined, recovery_threshold: undefined, recovery_pgp_keys: undefined, root_token_pgp_key: undefined },
        ],
      ]);
    });

    it('passes PGP keys on as lists, and the root token key as given', async () => {
      await raw('update', 'init', { recovery_shares: 2, recovery_threshold: 2, pgp_keys: 'key-a,key-b', recovery_pgp_keys: ['key-c', 'key-d'], root_token_pgp_key: 'key-e' });
      expect(lifecycle.calls[0][1]).toEqual({
        secret_shares: undefined,
        secret_threshold: undefined,
        pgp_keys: ['key-a', 'key-b'],
        recovery_shares: 2,
        recovery_threshold: 2,
        recovery_pgp_keys: ['key-c', 'key-d'],
        root_token_pgp_key: 'key-e',
      });
    });

    it('refuses stored shares with the Shamir seal, and other than 1 with an auto-unseal seal', async () => {
      expect(await refusal(raw('update', 'init', { secret_shares: 1, secret_threshold: 1, stored_shares: 1 }))).toEqual({ status: 400, message: 'stored_shares is not supported by the shamir seal' });
      lifecycle.seal.recoverySeal = true;
      expect(await refusal(raw('update', 'init', { recovery_shares: 1, recovery_threshold: 1, stored_shares: 0 }))).toEqual({ status: 400, message: 'stored_shares must be 1 with an auto-unseal seal' });
      expect(lifecycle.calls).toEqual([]);

      expect(await raw('update', 'init', { recovery_shares: 1, recovery_threshold: 1, stored_shares: 1 })).toEqual(INIT_ANSWER);
      lifecycle.seal.recoverySeal = false;
      expect(await raw('update', 'init', { secret_shares: 1, secret_threshold: 1, stored_shares: 0 })).toEqual(INIT_ANSWER);
      expect(lifecycle.calls).toHaveLength(2);
    });

    it('refuses a field of the wrong type', async () => {
      expect(await refusal(raw('update', 'init', { secret_shares: 'three' }))).toEqual({ status: 400, message: 'field "secret_shares": "three" is not a valid integer' });
    });
  });

  describe('sys/unseal and sys/seal-status', () => {
    const sealStatus = { type: 'shamir', initialized: true, t: 2, n: 3, progress: 1, nonce: 'unseal-nonce', version: VERSION, build_date: '2025-01-01T00:00:00Z', migration: false, recovery_seal: false, storage_type: 'inmem' };
    const modes = { replication_performance_mode: 'disabled', replication_dr_mode: 'primary' };

    it("reports the seal's status, sealed as this replica's state says, with the replication modes", async () => {
      lifecycle.state = 'sealed';
      expect(await raw('read', 'seal-status')).toEqual({ ...sealStatus, sealed: true, ...modes });
      lifecycle.state = 'unsealed';
      expect(await raw('read', 'seal-status')).toEqual({ ...sealStatus, sealed: false, ...modes });
    });

    it('submits a share (or a reset, or a migration share) and answers the seal status', async () => {
      lifecycle.state = 'sealed';
      expect(await raw('update', 'unseal', { reset: true })).toEqual({ ...sealStatus, sealed: true, ...modes });
      expect(await raw('update', 'unseal', { key: 'share-1', migrate: true })).toEqual({ ...sealStatus, sealed: false, ...modes });
      expect(await raw('update', 'unseal', { key: 'share-2' })).toEqual({ ...sealStatus, sealed: false, ...modes });
      expect(lifecycle.calls).toEqual([
        ['submitUnsealKey', undefined, true, false],
        ['submitUnsealKey', 'share-1', false, true],
        ['submitUnsealKey', 'share-2', false, false],
      ]);
    });

    it('refuses an unseal without a key unless it resets', async () => {
      expect(await refusal(raw('update', 'unseal', {}))).toEqual({ status: 400, message: 'missing required field "key"' });
      expect(await refusal(raw('update', 'unseal', { key: '' }))).toEqual({ status: 400, message: 'missing required field "key"' });
      expect(lifecycle.calls).toEqual([]);
    });
  });

  describe('sys/health', () => {
    const health = async (query: Body = {}) => {
      const response = await respond('read', 'health', query);
      return { status: response?.status, body: response?.raw as Body };
    };

    it("answers this node's state, version and cluster", async () => {
      lifecycle.state = 'unsealed';
      const before = Math.floor(Date.now() / 1000);
      const { status, body } = await health();
      expect(status).toBe(200);
      expect(body).toEqual({
        initialized: true,
        sealed: false,
        standby: false,
        performance_standby: false,
        replication_performance_mode: 'disabled',
        replication_dr_mode: 'primary',
        server_time_utc: expect.any(Number),
        version: VERSION,
        cluster_name: 'svc-cluster-test',
        cluster_id: 'cluster-id-1',
      });
      expect(body.server_time_utc).toBeGreaterThanOrEqual(before);
      expect(body.server_time_utc).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    });

    it("chooses the status code by the node's state, each overridable by its query parameter", async () => {
      const cases: [CoreState, number, string][] = [
        ['uninitialized', 501, 'uninitcode'],
        ['sealed', 503, 'sealedcode'],
        ['unsealed', 200, 'activecode'],
      ];
      for (const [state, code, parameter] of cases) {
        lifecycle.state = state;
        expect(await health()).toMatchObject({ status: code, body: { initialized: state !== 'uninitialized', sealed: state !== 'unsealed' } });
        expect((await health({ [parameter]: 299 })).status).toBe(299);
      }
      replication.isDrSecondary = true;
      expect((await health()).status).toBe(472);
      expect((await health({ drsecondarycode: 200 })).status).toBe(200);
    });

    it('answers 503 for an unsealed node out of contact with the other replicas, whatever the parameters', async () => {
      lifecycle.state = 'unsealed';
      replicas.inContact = false;
      expect(await health({ activecode: 200 })).toMatchObject({ status: 503, body: { initialized: true, sealed: false } });
    });

    it('refuses a status code that is not one', async () => {
      lifecycle.state = 'unsealed';
      expect(await refusal(health({ activecode: 600 }))).toEqual({ status: 400, message: 'invalid status code 600' });
      expect(await refusal(health({ activecode: 99 }))).toEqual({ status: 400, message: 'invalid status code 99' });
      expect(await refusal(health({ activecode: 'ok' }))).toEqual({ status: 400, message: 'field "activecode": "ok" is not a valid integer' });
    });
  });

  describe('sys/leader', () => {
    it('answers this node as the leader, HA only on a NATS bus, active since its unseal', async () => {
      const leader = {
        ha_enabled: false,
        is_self: true,
        active_time: '0001-01-01T00:00:00Z',
        leader_address: 'https://gw.example:8200',
        leader_cluster_address: 'https://gw.example:8201',
        performance_standby: false,
        performance_standby_last_remote_wal: 0,
      };
      expect(await raw('read', 'leader')).toEqual(leader);

      lifecycle.activeSince = new Date('2025-02-03T04:05:06.000Z');
      deps.bus = { kind: 'nats' };
      deps.config = {};
      expect(await raw('read', 'leader')).toEqual({ ...leader, ha_enabled: true, active_time: '2025-02-03T04:05:06.000Z', leader_address: '', leader_cluster_address: '' });
    });
  });

  describe('operator actions', () => {
    it('seals, steps down and rotates the barrier key, answering no content', async () => {
      lifecycle.state = 'unsealed';
      expect(await respond('update', 'step-down')).toBeUndefined();
      expect(stepDowns).toBe(1);
      expect(await respond('update', 'rotate')).toBeUndefined();
      expect(await respond('update', 'seal')).toBeUndefined();
      expect(lifecycle.calls).toEqual([['rotateKeyring'], ['sealNow']]);
      expect(lifecycle.state).toBe('sealed');
    });

    it("reads the barrier's active key term, at the top level of the answer; 503 while sealed", async () => {
      expect(await respond('read', 'key-status')).toEqual({ data: { term: 1, install_time: '2025-01-02T03:04:05.000Z' }, dataAtTopLevel: true });
      barrier.unseal(barrier.keyring.rotate(new Date('2025-03-01T00:00:00.000Z')));
      expect(await sys.read('key-status')).toEqual({ term: 2, install_time: '2025-03-01T00:00:00.000Z' });
      barrier.seal();
      expect(await refusal(respond('read', 'key-status'))).toEqual({ status: 503, message: 'Service is sealed' });
    });

    it('are sudo operations of the root namespace; key-status needs a token, the rest none', () => {
      for (const path of ['seal', 'step-down', 'rotate']) expect(sys.backend.operationInfo(path, 'update')).toMatchObject({ sudo: true, rootNamespace: true, unauthenticated: false });
      expect(sys.backend.operationInfo('key-status', 'read')).toMatchObject({ sudo: false, unauthenticated: false });
      const open: [string, 'read' | 'update'][] = [
        ['init', 'read'],
        ['init', 'update'],
        ['unseal', 'update'],
        ['seal-status', 'read'],
        ['health', 'read'],
        ['leader', 'read'],
      ];
      for (const [path, operation] of open) expect(sys.backend.operationInfo(path, operation)).toMatchObject({ unauthenticated: true });
    });
  });
});
