/**
 * Issue 16, automated snapshots: sys/storage/raft/snapshot-auto config and status, and the
 * snapshot service's scheduler writing to a local directory, in both topologies (distributed:
 * two snapshot service replicas, which must not both run a configuration in one interval), and
 * the other replica taking over when the one running a configuration is killed.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { Client } from 'pg';
import { extract } from 'tar-stream';
import { api, assertingCalls, eventually, initAndUnseal, POSTGRES_URL, startTopology, type ServerProcess, type Topology, type TopologyKind } from '@svc/testing';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

interface SnapshotCluster {
  topology: Topology;
  url: string;
  root: string;
  dir: string;
}

/** A topology with two snapshot service replicas, initialized, and a directory for local targets, for the enclosing describe. */
function snapshotCluster(kind: TopologyKind): SnapshotCluster {
  const cluster = {} as SnapshotCluster;
  beforeAll(async () => {
    cluster.dir = mkdtempSync(path.join(tmpdir(), 'svc-snapshot-auto-'));
    cluster.topology = await startTopology(kind, { services: ['snapshot', 'snapshot'] });
    cluster.url = cluster.topology.urls[0];
    cluster.root = (await initAndUnseal(cluster.url)).rootToken;
  }, 300_000);
  afterAll(async () => {
    await cluster.topology?.stop();
    rmSync(cluster.dir, { recursive: true, force: true });
  });
  return cluster;
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('automated snapshots, %s', (kind) => {
  const cluster = snapshotCluster(kind);
  const call = (method: string, where: string, body?: unknown, token = cluster.root) => api<Body>(cluster.url, method, `/v1/${where}`, { body, token });
  const { ok, refused } = assertingCalls(call);
  const config = (name: string) => `sys/storage/raft/snapshot-auto/config/${name}`;
  const status = async (name: string) => (await ok('GET', `sys/storage/raft/snapshot-auto/status/${name}`)).data;
  const snapshotsIn = (directory: string, prefix: string) => readdirSync(directory).filter((name) => name.startsWith(prefix)).sort();

  test('a configuration is refused with a 400 naming the field', async () => {
    const local = { interval: '1h', path_prefix: cluster.dir, storage_type: 'local', local_max_space: 1_000_000 };
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
    const target = path.join(cluster.dir, 'every-second');
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
    const restored = await api(cluster.url, 'POST', '/v1/sys/storage/raft/snapshot', { rawBody: newest, token: cluster.root });
    expect(restored.status).toBe(204);
    await ok('DELETE', config('local'));
  });

  test('local_max_space too small: the attempt fails with the error in status and leaves no file', async () => {
    const target = path.join(cluster.dir, 'tiny');
    await ok('POST', config('tiny'), { interval: 1, path_prefix: target, file_prefix: 'tiny', storage_type: 'local', local_max_space: 100 });
    await eventually(async () => (await status('tiny')).last_snapshot_error !== '', 60_000, 100);
    const current = await status('tiny');
    expect(current.last_snapshot_error).toMatch(/^insufficient space: the snapshot takes \d+ bytes, files with prefix "tiny" already take 0 of local_max_space 100$/);
    expect(current.last_snapshot_url).toMatch(/^file:\/\/.*\/tiny-\d{19}\.snap$/);
    expect(readdirSync(target)).toEqual([]);
    await ok('DELETE', config('tiny'));
  });
});

/** The member names of a snapshot archive, read whole (a truncated archive fails). */
async function archiveMembers(file: string): Promise<string[]> {
  const names: string[] = [];
  const tar = extract();
  tar.on('entry', (header, stream, next) => {
    names.push(header.name);
    stream.on('end', next);
    stream.resume();
  });
  await pipeline(createReadStream(file), createGunzip(), tar);
  return names;
}

describe('automated snapshots, distributed: the replica running a configuration is killed', () => {
  const NAME = 'failover';
  const INTERVAL_SECONDS = 2;
  const cluster = snapshotCluster('distributed');
  const call = (method: string, where: string, body?: unknown) => api<Body>(cluster.url, method, `/v1/${where}`, { body, token: cluster.root });
  const { ok } = assertingCalls(call);
  const status = async () => (await ok('GET', `sys/storage/raft/snapshot-auto/status/${NAME}`)).data;
  /** The snapshot URLs a replica logged for this configuration with `msg`, in order. */
  const logged = (replica: ServerProcess, msg: string): string[] =>
    replica.logs
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg?: string; config?: string; url?: string })
      .filter((entry) => entry.msg === msg && entry.config === NAME)
      .map((entry) => entry.url!);
  const written = (replica: ServerProcess) => logged(replica, 'automated snapshot written');
  /** Rows outside the service's key space that make each snapshot take a while (storage is copied as it is). */
  const filler = async (action: 'fill' | 'remove') => {
    const client = new Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      if (action === 'remove') {
        await client.query(`DELETE FROM ${cluster.topology.storageTable} WHERE parent_path = 'failover-filler/'`);
        return;
      }
      for (let batch = 0; batch < 10; batch++) {
        const names = Array.from({ length: 1_000 }, (_, i) => `row-${batch * 1_000 + i}`);
        const values = names.map(() => randomBytes(4_096));
        await client.query(`INSERT INTO ${cluster.topology.storageTable} (parent_path, name, value) SELECT 'failover-filler/', * FROM unnest($1::text[], $2::bytea[])`, [names, values]);
      }
    } finally {
      await client.end();
    }
  };

  test('one replica per interval; after kill -9 of the lock holder mid-run the other continues once the lock expires, with no partial file and no tick run twice', async () => {
    const target = path.join(cluster.dir, 'snapshots');
    await ok('POST', `sys/storage/raft/snapshot-auto/config/${NAME}`, {
      interval: INTERVAL_SECONDS,
      retain: 1_000,
      path_prefix: target,
      file_prefix: 'fo',
      storage_type: 'local',
      local_max_space: 10_000_000_000,
    });
    const replicas = cluster.topology.processes.filter((p) => p.name.startsWith('snapshot'));
    expect(replicas.map((p) => p.name)).toEqual(['snapshot', 'snapshot-1']);
    const allWritten = () => replicas.flatMap(written);
    await eventually(async () => allWritten().length >= 3, 120_000, 100);

    // Each run takes a while from now on, so a run can be caught under way.
    await filler('fill');
    const filledAtNs = BigInt(Date.now()) * 1_000_000n;
    let holder: ServerProcess | undefined;
    let interrupted = '';
    await eventually(
      async () => {
        for (const replica of replicas) {
          const started = logged(replica, 'automated snapshot started');
          const last = started[started.length - 1];
          // A run that started after the fill has the rows to copy: it is still under way.
          const after = last !== undefined && BigInt(/-(\d+)\.snap$/.exec(last)![1]) > filledAtNs;
          if (after && !written(replica).includes(last) && !logged(replica, 'automated snapshot failed').includes(last)) [holder, interrupted] = [replica, last];
        }
        return holder !== undefined;
      },
      120_000,
      20,
    );
    const exited = new Promise((resolve) => holder!.child.once('exit', resolve));
    holder!.child.kill('SIGKILL');
    await exited;
    await filler('remove');
    // Killed while running: it never finished the attempt the status names.
    expect(written(holder!)).not.toContain(interrupted);
    expect((await status()).snapshot_url).toBe(interrupted);

    // The other replica runs the configuration once the dead holder's lock expires, and keeps running it.
    const survivor = replicas.find((replica) => replica !== holder)!;
    const before = written(survivor).length;
    await eventually(async () => written(survivor).length >= before + 2, 180_000, 100);
    const current = await status();
    expect(current.last_snapshot_error).toBe('');
    expect(written(survivor)).toContain(current.last_snapshot_url);

    const files = readdirSync(target).sort();
    // No partial copy is left, whether the kill came during the copy or before it.
    expect(files.filter((name) => !/^fo-\d{19}\.snap$/.test(name))).toEqual([]);
    // Every run finished by a replica is one file, written by exactly one replica once.
    const names = (urls: string[]) => urls.map((u) => path.basename(u)).sort();
    const finished = names(allWritten());
    expect(new Set(finished).size).toBe(finished.length);
    expect(files.filter((name) => name !== path.basename(interrupted))).toEqual(finished);
    for (const file of files) expect(await archiveMembers(path.join(target, file))).toEqual(['meta.json', 'state.bin', 'SHA256SUMS', 'SHA256SUMS.sealed']);
    // No tick ran twice: the files (named by each run's start) are at least an interval apart.
    const starts = files.map((name) => BigInt(/-(\d+)\.snap$/.exec(name)![1]));
    for (let i = 1; i < starts.length; i++) expect(starts[i] - starts[i - 1]).toBeGreaterThanOrEqual(BigInt(INTERVAL_SECONDS) * 1_000_000_000n);
    await ok('DELETE', `sys/storage/raft/snapshot-auto/config/${NAME}`);
  }, 600_000);
});
