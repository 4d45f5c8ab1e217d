import { Backend, type Operation } from '@svc/framework';
import { ServiceError, type WrapInfo } from '@svc/api-contract';
import type { GenerateRootStatus } from '@svc/seal';
import { generationNotStarted, MountedBackend, mountStorage, refusal, testMount } from '@svc/testing';
import type { SecondaryEnableRequest, UpdatePrimaryRequest } from './host';
import { checkPathsFilter } from './paths-filter';
import { replicationPaths, type ReplicationPathsDeps } from './sys-paths';
import type { PathsFilter, ReplicationMode } from './types';

type Body = Record<string, unknown>;

const WRAP_INFO: WrapInfo = { token: 'wrapping.jwt', accessor: 'wrapping-accessor', ttl: 1800, creation_time: '2025-01-01T00:00:00Z', creation_path: 'sys/replication/dr/primary/secondary-token' };
const MERKLE_REPORT = { corrupted_root: false, corrupted_tree_map: {}, last_corruption_check_epoch: '2025-01-01T00:00:00Z' };
const VALID_DR_TOKEN = 'svd.valid';

type ReplicationOperations = ReplicationPathsDeps['replication'];

/** Replication as the paths drive it: every call recorded, DR secondary checks as the real one makes them. */
class FakeReplication implements ReplicationOperations {
  readonly calls: unknown[][] = [];
  drSecondary = false;
  readonly operationTokens = new Set([VALID_DR_TOKEN]);
  private readonly filters = new Map<string, PathsFilter>();

  async status(mode: ReplicationMode): Promise<Record<string, unknown>> {
    return { mode: 'primary', cluster_id: `${mode}-cluster` };
  }
  async enablePrimary(mode: ReplicationMode, primaryClusterAddr: string): Promise<void> {
    this.calls.push(['enablePrimary', mode, primaryClusterAddr]);
  }
  async demotePrimary(mode: ReplicationMode): Promise<void> {
    this.calls.push(['demotePrimary', mode]);
  }
  async disablePrimary(mode: ReplicationMode): Promise<void> {
    this.calls.push(['disablePrimary', mode]);
  }
  async secondaryToken(mode: ReplicationMode, id: string, ttl: number, secondaryPublicKey: string): Promise<{ wrapInfo?: WrapInfo; token?: string }> {
    this.calls.push(['secondaryToken', mode, id, ttl, secondaryPublicKey]);
    return secondaryPublicKey ? { token: `encrypted-for-${id}` } : { wrapInfo: WRAP_INFO };
  }
  async revokeSecondary(mode: ReplicationMode, id: string): Promise<void> {
    this.calls.push(['revokeSecondary', mode, id]);
  }
  async generatePublicKey(mode: ReplicationMode): Promise<string> {
    return `${mode}-public-key`;
  }
  async enableSecondary(mode: ReplicationMode, request: SecondaryEnableRequest): Promise<void> {
    this.calls.push(['enableSecondary', mode, request]);
  }
  async promote(mode: ReplicationMode, primaryClusterAddr: string, force: boolean): Promise<void> {
    this.calls.push(['promote', mode, primaryClusterAddr, force]);
  }
  async disableSecondary(mode: ReplicationMode): Promise<void> {
    this.calls.push(['disableSecondary', mode]);
  }
  async updatePrimary(mode: ReplicationMode, request: UpdatePrimaryRequest): Promise<void> {
    this.calls.push(['updatePrimary', mode, request]);
  }
  async writePathsFilter(id: string, mode: string, paths: unknown[]): Promise<void> {
    this.filters.set(id, checkPathsFilter(mode, paths));
  }
  async readPathsFilter(id: string): Promise<PathsFilter | null> {
    return this.filters.get(id) ?? null;
  }
  async deletePathsFilter(id: string): Promise<void> {
    this.filters.delete(id);
  }
  async primaryDynamicFilter(id: string) {
    return { dynamic_filtered_mounts: [`secret-of-${id}/`], dynamic_filtered_namespaces: [] };
  }
  async secondaryDynamicFilter(id: string) {
    return { dynamic_filtered_mounts: [], dynamic_filtered_namespaces: [`team-of-${id}/`] };
  }
  async requireDrSecondary(): Promise<void> {
    if (!this.drSecondary) throw ServiceError.badRequest('this cluster is not a DR secondary (it is disabled)');
  }
  async requireOperationToken(token: string): Promise<void> {
    if (!this.operationTokens.has(token)) throw ServiceError.forbidden();
  }
  async deleteOperationToken(token: string): Promise<void> {
    await this.requireOperationToken(token);
    this.operationTokens.delete(token);
  }
  async reindex(options: { diff?: boolean; force?: boolean; skipFlush?: boolean }): Promise<string[]> {
    this.calls.push(['reindex', options]);
    return ['reindexed 3 keys'];
  }
  async merkleCheck() {
    return MERKLE_REPORT;
  }
}

const GENERATION_STATUS: GenerateRootStatus = { ...generationNotStarted(28), started: true, nonce: 'generation-nonce' };

describe('sys/replication', () => {
  let replication: FakeReplication;
  /** The calls to the DR operation token's generation. */
  let generation: unknown[][];
  let sys: MountedBackend;

  const respond = (operation: Operation, path: string, data: Body = {}) => sys.request(operation, path, data);
  const write = (path: string, data: Body = {}) => sys.write(`replication/${path}`, data);

  beforeEach(() => {
    replication = new FakeReplication();
    generation = [];
    const drOperationToken: ReplicationPathsDeps['drOperationToken'] = {
      status: async () => GENERATION_STATUS,
      start: async (pgpKey) => {
        generation.push(['start', pgpKey]);
        return GENERATION_STATUS;
      },
      cancel: async () => void generation.push(['cancel']),
      update: async (key, nonce) => {
        generation.push(['update', key, nonce]);
        return { ...GENERATION_STATUS, progress: 1 };
      },
    };
    const mount = testMount('system', { path: 'sys/' });
    sys = new MountedBackend(new Backend({ type: 'system', help: 'Replication.', paths: replicationPaths({ replication, drOperationToken }) }), mount, mountStorage(mount));
  });

  describe.each(['performance', 'dr'] as const)('%s mode', (mode) => {
    it('reports the status without a token', async () => {
      expect(await sys.read(`replication/${mode}/status`)).toEqual({ mode: 'primary', cluster_id: `${mode}-cluster` });
      expect(sys.backend.operationInfo(`replication/${mode}/status`, 'read')).toMatchObject({ unauthenticated: true });
    });

    it('enables, demotes and disables a primary', async () => {
      expect(await write(`${mode}/primary/enable`)).toEqual({});
      await write(`${mode}/primary/enable`, { primary_cluster_addr: 'https://lb.example:8201' });
      await write(`${mode}/primary/demote`);
      await write(`${mode}/primary/disable`);
      expect(replication.calls).toEqual([
        ['enablePrimary', mode, ''],
        ['enablePrimary', mode, 'https://lb.example:8201'],
        ['demotePrimary', mode],
        ['disablePrimary', mode],
      ]);
    });

    it('makes activation tokens, wrapped or encrypted to the secondary, and revokes secondaries', async () => {
      const wrapped = await respond('update', `replication/${mode}/primary/secondary-token`, { id: 'east' });
      expect(wrapped).toEqual({ raw: expect.objectContaining({ request_id: expect.any(String), wrap_info: WRAP_INFO, data: null, auth: null }) });
      expect(await write(`${mode}/primary/secondary-token`, { id: 'west', ttl: '1h', secondary_public_key: 'public-key' })).toEqual({ token: 'encrypted-for-west' });
      await write(`${mode}/primary/revoke-secondary`, { id: 'east' });
      expect(await write(`${mode}/secondary/generate-public-key`)).toEqual({ secondary_public_key: `${mode}-public-key` });
      expect(replication.calls).toEqual([
        ['secondaryToken', mode, 'east', 1800, ''],
        ['secondaryToken', mode, 'west', 3600, 'public-key'],
        ['revokeSecondary', mode, 'east'],
      ]);
    });

    it('refuses activation tokens and revocations without the secondary id', async () => {
      for (const path of ['primary/secondary-token', 'primary/revoke-secondary']) {
        expect(await refusal(write(`${mode}/${path}`))).toEqual({ status: 400, message: 'missing required field "id"' });
      }
      expect(await refusal(write(`${mode}/primary/secondary-token`, { id: 'east', ttl: 'soon' }))).toEqual({ status: 400, message: 'field "ttl": "soon" is not a valid duration' });
      expect(replication.calls).toEqual([]);
    });

    it('enables a secondary with its activation token and the CA of the primary', async () => {
      await write(`${mode}/secondary/enable`, { token: 'activation', primary_api_addr: 'https://primary:8200', ca_file: '/etc/ca.pem', ca_path: '/etc/ca' });
      await write(`${mode}/secondary/enable`, { token: 'activation' });
      expect(replication.calls).toEqual([
        ['enableSecondary', mode, { token: 'activation', primaryApiAddr: 'https://primary:8200', caFile: '/etc/ca.pem', caPath: '/etc/ca' }],
        ['enableSecondary', mode, { token: 'activation', primaryApiAddr: undefined, caFile: undefined, caPath: undefined }],
      ]);
      expect(await refusal(write(`${mode}/secondary/enable`, { primary_api_addr: 'https://primary:8200' }))).toEqual({ status: 400, message: 'missing required field "token"' });
    });

    it('needs sudo in the root namespace for every call of a primary', () => {
      for (const path of ['primary/enable', 'primary/demote', 'primary/disable', 'primary/secondary-token', 'primary/revoke-secondary', 'secondary/generate-public-key', 'secondary/enable']) {
        expect(sys.backend.operationInfo(`replication/${mode}/${path}`, 'update')).toMatchObject({ sudo: true, rootNamespace: true, unauthenticated: false });
      }
    });
  });

  describe("a performance secondary's calls", () => {
    it('promote, disable and update the primary for a sudo token', async () => {
      expect(await respond('update', 'replication/performance/secondary/promote', { force: true })).toBeUndefined();
      await write('performance/secondary/disable');
      await write('performance/secondary/update-primary', { update_primary_addrs: 'https://p1:8201,https://p2:8201' });
      await write('performance/secondary/update-primary', { token: '' });
      expect(replication.calls).toEqual([
        ['promote', 'performance', '', true],
        ['disableSecondary', 'performance'],
        ['updatePrimary', 'performance', { token: undefined, primaryApiAddr: undefined, caFile: undefined, caPath: undefined, tokenGiven: false, updatePrimaryAddrs: ['https://p1:8201', 'https://p2:8201'] }],
        ['updatePrimary', 'performance', { token: '', primaryApiAddr: undefined, caFile: undefined, caPath: undefined, tokenGiven: true, updatePrimaryAddrs: [] }],
      ]);
      for (const path of ['promote', 'disable', 'update-primary']) {
        expect(sys.backend.operationInfo(`replication/performance/secondary/${path}`, 'update')).toMatchObject({ sudo: true, unauthenticated: false });
      }
    });
  });

  describe("a DR secondary's calls", () => {
    beforeEach(() => {
      replication.drSecondary = true;
    });

    it("promote with a DR operation token, answering Vault's share progress, complete", async () => {
      const promoted = (await respond('update', 'replication/dr/secondary/promote', { dr_operation_token: VALID_DR_TOKEN, primary_cluster_addr: 'https://dr:8201' }))!;
      const progress = { progress: 0, required: 0, complete: true };
      expect(promoted.raw).toEqual({ request_id: expect.any(String), lease_id: '', renewable: false, lease_duration: 0, data: progress, wrap_info: null, warnings: null, auth: null, ...progress });
      expect(replication.calls).toEqual([['promote', 'dr', 'https://dr:8201', false]]);
    });

    it('disable and update the primary with a DR operation token', async () => {
      await write('dr/secondary/disable', { dr_operation_token: VALID_DR_TOKEN });
      await write('dr/secondary/update-primary', { dr_operation_token: VALID_DR_TOKEN, token: 'activation' });
      expect(replication.calls).toEqual([
        ['disableSecondary', 'dr'],
        ['updatePrimary', 'dr', { token: 'activation', primaryApiAddr: undefined, caFile: undefined, caPath: undefined, tokenGiven: true, updatePrimaryAddrs: [] }],
      ]);
    });

    it('reindex, check the Merkle index and delete operation tokens', async () => {
      expect(await sys.request('update', 'replication/dr/secondary/reindex', { dr_operation_token: VALID_DR_TOKEN, diff: true, skip_flush: true })).toEqual({ warnings: ['reindexed 3 keys'] });
      expect(replication.calls).toEqual([['reindex', { diff: true, force: false, skipFlush: true }]]);
      expect(await write('dr/secondary/merkle-check', { dr_operation_token: VALID_DR_TOKEN })).toEqual({ merkle_corruption_report: MERKLE_REPORT });

      expect(await write('dr/secondary/operation-token/delete', { dr_operation_token: VALID_DR_TOKEN })).toEqual({});
      expect(replication.operationTokens.size).toBe(0);
      expect(await refusal(write('dr/secondary/merkle-check', { dr_operation_token: VALID_DR_TOKEN }))).toEqual({ status: 403, message: 'permission denied' });
    });

    it('are refused without a DR operation token, with an unknown one, and on a cluster that is no DR secondary', async () => {
      const paths = ['promote', 'disable', 'update-primary', 'reindex', 'merkle-check', 'operation-token/delete'];
      for (const path of paths) {
        expect(await refusal(write(`dr/secondary/${path}`))).toEqual({ status: 400, message: 'missing required field "dr_operation_token"' });
        expect(await refusal(write(`dr/secondary/${path}`, { dr_operation_token: 'svd.unknown' }))).toEqual({ status: 403, message: 'permission denied' });
      }
      replication.drSecondary = false;
      for (const path of paths) {
        expect(await refusal(write(`dr/secondary/${path}`, { dr_operation_token: VALID_DR_TOKEN }))).toEqual({ status: 400, message: 'this cluster is not a DR secondary (it is disabled)' });
      }
      expect(replication.calls).toEqual([]);
      expect(replication.operationTokens.size).toBe(1);
    });

    it('need no client token (a DR secondary has none) and are the root namespace', () => {
      for (const path of ['promote', 'disable', 'update-primary', 'reindex', 'merkle-check', 'operation-token/delete']) {
        expect(sys.backend.operationInfo(`replication/dr/secondary/${path}`, 'update')).toMatchObject({ unauthenticated: true, rootNamespace: true, sudo: false });
      }
    });
  });

  describe('DR operation token generation', () => {
    const prefix = 'replication/dr/secondary/generate-operation-token';

    it('runs on a DR secondary from a threshold of shares', async () => {
      replication.drSecondary = true;
      expect((await respond('read', `${prefix}/attempt`))?.raw).toEqual(GENERATION_STATUS);
      expect((await respond('update', `${prefix}/attempt`, { pgp_key: '' }))?.raw).toEqual(GENERATION_STATUS);
      expect((await respond('update', `${prefix}/update`, { key: 'share', nonce: 'generation-nonce' }))?.raw).toEqual({ ...GENERATION_STATUS, progress: 1 });
      expect(await respond('delete', `${prefix}/attempt`)).toBeUndefined();
      expect(generation).toEqual([['start', undefined], ['update', 'share', 'generation-nonce'], ['cancel']]);
      expect(sys.backend.operationInfo(`${prefix}/attempt`, 'update')).toMatchObject({ unauthenticated: true, rootNamespace: true });
    });

    it('is refused elsewhere', async () => {
      const notDrSecondary = { status: 400, message: 'this cluster is not a DR secondary (it is disabled)' };
      expect(await refusal(respond('read', `${prefix}/attempt`))).toEqual(notDrSecondary);
      expect(await refusal(respond('update', `${prefix}/attempt`))).toEqual(notDrSecondary);
      expect(await refusal(respond('delete', `${prefix}/attempt`))).toEqual(notDrSecondary);
      expect(await refusal(respond('update', `${prefix}/update`, { key: 'share', nonce: 'n' }))).toEqual(notDrSecondary);
      expect(generation).toEqual([]);
    });
  });

  describe('performance paths filters', () => {
    const filter = 'replication/performance/primary/paths-filter/east';

    it('writes, reads and removes the filter of a secondary', async () => {
      expect(await sys.read(filter)).toBeUndefined();
      await sys.write(filter, { mode: 'deny', paths: ['secret', 'team-a/'] });
      expect(await sys.read(filter)).toEqual({ mode: 'deny', paths: ['secret/', 'team-a/'] });
      await sys.write(filter, { paths: ['kv/'] });
      expect(await sys.read(filter)).toEqual({ mode: 'allow', paths: ['kv/'] });
      expect(await respond('delete', filter)).toBeUndefined();
      expect(await sys.read(filter)).toBeUndefined();
    });

    it('refuses a mode other than allow or deny', async () => {
      expect(await refusal(sys.write(filter, { mode: 'block', paths: [] }))).toEqual({ status: 400, message: 'field "mode": "block" is not one of: allow, deny' });
      expect(await sys.read(filter)).toBeUndefined();
    });

    it("reads the dynamic filters as the primary and as the secondary see them", async () => {
      expect(await sys.read('replication/performance/primary/dynamic-filter/east')).toEqual({ dynamic_filtered_mounts: ['secret-of-east/'], dynamic_filtered_namespaces: [] });
      expect(await sys.read('replication/performance/secondary/dynamic-filter/east')).toEqual({ dynamic_filtered_mounts: [], dynamic_filtered_namespaces: ['team-of-east/'] });
    });

    it('need sudo in the root namespace', () => {
      for (const operation of ['read', 'update', 'delete'] as const) expect(sys.backend.operationInfo(filter, operation)).toMatchObject({ sudo: true, rootNamespace: true });
      for (const side of ['primary', 'secondary']) expect(sys.backend.operationInfo(`replication/performance/${side}/dynamic-filter/east`, 'read')).toMatchObject({ sudo: true, rootNamespace: true });
    });
  });
});
