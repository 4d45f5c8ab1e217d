/**
 * Issue 16, automated snapshots: sys/storage/raft/snapshot-auto config and status, and the
 * snapshot service's scheduler writing to a local directory, in both topologies (distributed:
 * two snapshot service replicas, which must not both run a configuration in one interval).
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { api, assertingCalls, eventually, initAndUnseal, startTopology, type Topology, type TopologyKind } from '@svc/testing';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

describe.each<TopologyKind>(['all-in-one', 'distributed'])('automated snapshots, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let root: string;
  let dir: string;
  const call = (method: string, where: string, body?: unknown, token = root) => api<Body>(url, method, `/v1/${where}`, { body, token });
  const { ok, refused } = assertingCalls(call);
  const config = (name: string) => `sys/storage/raft/snapshot-auto/config/${name}`;
  const status = async (name: string) => (await ok('GET', `sys/storage/raft/snapshot-auto/status/${name}`)).data;
  const snapshotsIn = (directory: string, prefix: string) => readdirSync(directory).filter((name) => name.startsWith(prefix)).sort();

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-snapshot-auto-'));
    topology = await startTopology(kind, { services: ['snapshot', 'snapshot'] });
    url = topology.urls[0];
    ({ rootToken: root } = await initAndUnseal(url));
  }, 300_000);

  afterAll(async () => {
    await topology?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a configuration is refused with a 400 naming the field', async () => {
    const local = { interval: '1h', path_prefix: dir, storage_type: 'local', local_max_space: 1_000_000 };
    await refused('POST', config('bad'), { ...local, storage_type: undefined }, 400, /missing required field "storage_type"/);
    await refused('POST', config('bad'), { ...local, storage_type: 'ftp' }, 400, /"storage_type".*ftp|storage_type "ftp"/);
    await refused('POST', config('bad'), { ...local, interval: undefined }, 400, /missing required field "interval"/);
    await refused('POST', config('bad'), { ...local, interval: 'soon' }, 400, /interval/);
    await refused('POST', config('bad'), { ...local, local_max_space: undefined }, 400, /missing required field "local_max_space" for storage_type local/);
    await refused('POST', config('bad'), { ...local, retain: 0 }, 400, /retain must be an integer of at least 1/);
    await refused('POST', config('bad'), { ...local, cloud_objstore_bucket: 'b' }, 400, /field "cloud_objstore_bucket" does not apply to storage_type local/);
    const blob = { interval: 60, storage_type: 'cloudb-blob', cloudb_container_name: 'c', cloudb_account_name: 'acct' };
    await refused('POST', config('bad'), { ...blob, path_prefix: 'snaps' }, 400, /path_prefix must end in "\/" for storage_type cloudb-blob/);
    await refused('POST', config('bad'), { ...blob, path_prefix: 'snaps/', cloudb_blob_environment: 'Moon' }, 400, /cloudb_blob_environment must be one of/);
    const s3 = { interval: 60, storage_type: 'cloud-objstore', path_prefix: 'snaps', cloud_objstore_bucket: 'b', cloud_objstore_region: 'us-east-1' };
    await refused('POST', config('bad'), { ...s3, cloud_objstore_enable_kms: true, cloud_objstore_server_side_encryption: true }, 400, /cloud_objstore_server_side_encryption cannot be combined with cloud_objstore_enable_kms/);
    await refused('POST', config('bad'), { ...s3, cloud_objstore_region: undefined }, 400, /missing required field "cloud_objstore_region"/);
    await refused('POST', config('bad'), { interval: 60, storage_type: 'cloudc-bucket', path_prefix: 'p/', cloudc_bucket: 'b', cloudc_service_account_key: '{"no":1}' }, 400, /cloudc_service_account_key must be a service-account key/);
    expect((await call('GET', config('bad'))).status).toBe(404);
  });

  test('a configuration reads back with its interval in seconds and without its credentials; updates merge; LIST and DELETE', async () => {
    await ok('POST', config('offsite'), {
      interval: '2h',
      storage_type: 'cloud-objstore',
      path_prefix: 'backups',
      cloud_objstore_bucket: 'bucket',
      cloud_objstore_region: 'eu-west-1',
      cloud_access_key_id: 'AKIAEXAMPLE',
      cloud_secret_access_key: 'very-secret',
    });
    expect((await ok('GET', config('offsite'))).data).toEqual({
      interval: 7200,
      retain: 1,
      path_prefix: 'backups',
      file_prefix: 'service-snapshot',
      storage_type: 'cloud-objstore',
      cloud_objstore_bucket: 'bucket',
      cloud_objstore_region: 'eu-west-1',
      cloud_access_key_id: 'AKIAEXAMPLE',
    });
    await ok('POST', config('offsite'), { retain: 5 });
    expect((await ok('GET', config('offsite'))).data).toMatchObject({ interval: 7200, retain: 5 });
    expect((await ok('LIST', 'sys/storage/raft/snapshot-auto/config')).data.keys).toEqual(['offsite']);
    const reader = (await ok('POST', 'auth/token/create', { policies: ['default'] })).auth.client_token as string;
    expect((await call('GET', config('offsite'), undefined, reader)).status).toBe(403);
    await ok('DELETE', config('offsite'));
    expect((await call('GET', config('offsite'))).status).toBe(404);
    expect((await call('GET', 'sys/storage/raft/snapshot-auto/status/offsite')).status).toBe(404);
  });

  test('local: a snapshot every interval on one replica, the newest `retain` kept, status with file:// URLs; the files restore', async () => {
    const target = path.join(dir, 'every-second');
    await ok('POST', config('local'), { interval: '1s', retain: 2, path_prefix: target, file_prefix: 'app', storage_type: 'local', local_max_space: 50_000_000 });
    const runs = new Set<string>();
    await eventually(async () => {
      const current = await status('local');
      if (current.last_snapshot_start !== '0001-01-01T00:00:00Z') runs.add(current.last_snapshot_start as string);
      return runs.size >= 4;
    }, 60_000, 100);
    const current = await status('local');
    expect(current.last_snapshot_error).toBe('');
    const files = snapshotsIn(target, 'app');
    expect(files).toHaveLength(2);
    for (const file of files) expect(file).toMatch(/^app-\d{19}\.snap$/);
    expect(current.last_snapshot_url).toMatch(new RegExp(`^file://${target}/app-\\d{19}\\.snap$`));
    expect(Object.keys(current).sort()).toEqual(['last_snapshot_end', 'last_snapshot_error', 'last_snapshot_start', 'last_snapshot_url', 'snapshot_start', 'snapshot_url']);
    // Two replicas never ran it twice in one interval: consecutive snapshots are an interval apart.
    const starts = [...runs].map((at) => Date.parse(at)).sort((a, b) => a - b);
    for (let i = 1; i < starts.length; i++) expect(starts[i] - starts[i - 1]).toBeGreaterThanOrEqual(1_000);
    const newest = readFileSync(path.join(target, files[files.length - 1]));
    const restored = await api(url, 'POST', '/v1/sys/storage/raft/snapshot', { rawBody: newest, token: root });
    expect(restored.status).toBe(204);
    await ok('DELETE', config('local'));
  });

  test('local_max_space too small: the attempt fails with the error in status and leaves no file', async () => {
    const target = path.join(dir, 'tiny');
    await ok('POST', config('tiny'), { interval: 1, path_prefix: target, file_prefix: 'tiny', storage_type: 'local', local_max_space: 100 });
    await eventually(async () => (await status('tiny')).last_snapshot_error !== '', 60_000, 100);
    const current = await status('tiny');
    expect(current.last_snapshot_error).toMatch(/^insufficient space: the snapshot takes \d+ bytes, files with prefix "tiny" already take 0 of local_max_space 100$/);
    expect(current.last_snapshot_url).toMatch(/^file:\/\/.*\/tiny-\d{19}\.snap$/);
    expect(readdirSync(target)).toEqual([]);
    await ok('DELETE', config('tiny'));
  });
});
