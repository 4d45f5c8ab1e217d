import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { Backend } from '@svc/framework';
import { createSnapshot } from './archive';
import { CONFIG_PREFIX, STATUS_PREFIX } from './config';
import { Barrier, InmemPhysical, Keyring, createView, type StorageView } from '@svc/storage';
import { MountedBackend, engineRequest, mountStorage, refusal, testMount } from '@svc/testing';
import { snapshotPaths } from './sys-paths';

const CONFIG = 'storage/raft/snapshot-auto/config/';
const LOCAL = { interval: '1h', path_prefix: '/var/backups', storage_type: 'local', local_max_space: 1_000_000 };

describe('sys/storage/raft/snapshot*', () => {
  let sys: MountedBackend;
  /** The barrier's contents, as the snapshot service reads and writes them. */
  let stored: StorageView;
  /** The restores asked for: the body received, and whether forced. */
  let restores: { body: string; force: boolean }[];
  /** The snapshot files handed out, and their removals once sent. */
  let saved: string[];
  let disposals: Promise<void>[];

  beforeEach(() => {
    const physical = new InmemPhysical();
    const barrier = new Barrier(physical);
    barrier.unseal(Keyring.generate());
    stored = createView(barrier, '');
    restores = [];
    saved = [];
    disposals = [];
    const snapshots = {
      save: async () => {
        const file = await createSnapshot(physical, barrier.keyring);
        saved.push(file.path);
        return { ...file, dispose: () => disposals[disposals.push(file.dispose()) - 1] };
      },
      restore: async (body: Readable, force: boolean) => {
        const chunks: Buffer[] = [];
        for await (const chunk of body) chunks.push(Buffer.from(chunk as string));
        restores.push({ body: Buffer.concat(chunks).toString('utf8'), force });
      },
    };
    const mount = testMount('system', { path: 'sys/' });
    sys = new MountedBackend(new Backend({ type: 'system', help: 'Snapshots.', paths: snapshotPaths({ barrier, snapshots }) }), mount, mountStorage(mount));
  });

  const withBody = (path: string, body: string) => sys.backend.handle({ ...engineRequest(sys.mount, 'update', path), body: Readable.from([Buffer.from(body)]) });

  describe('save and restore', () => {
    it('streams a gzip archive of the storage as an attachment, and removes the file once sent', async () => {
      await stored.putJSON('sys/policy/reader', { rules: 'path "secret/*" { capabilities = ["read"] }' });
      const response = (await sys.request('read', 'storage/raft/snapshot'))!;
      const chunks: Buffer[] = [];
      for await (const chunk of response.stream!) chunks.push(chunk as Buffer);
      const archive = Buffer.concat(chunks);
      // A gzip'd tar whose meta.json names the snapshot and counts the one stored entry.
      const meta = JSON.parse(/\{"version":1,[^}]*\}/.exec(gunzipSync(archive).toString('latin1'))![0]);
      expect(meta).toMatchObject({ id: expect.any(String), entries: 1, storage_type: 'inmem' });
      expect(response.headers).toEqual({
        'content-type': 'application/gzip',
        'content-length': String(archive.length),
        'content-disposition': `attachment; filename="${meta.id}.snap"`,
      });
      if (!response.stream!.closed) await once(response.stream!, 'close');
      await Promise.all(disposals);
      expect(disposals).toHaveLength(1);
      expect(saved).toHaveLength(1);
      expect(existsSync(saved[0])).toBe(false);
    });

    it('restores the request body, forced only through snapshot-force', async () => {
      expect(await withBody('storage/raft/snapshot', 'archive-1')).toBeUndefined();
      expect(await withBody('storage/raft/snapshot-force', 'archive-2')).toBeUndefined();
      expect(restores).toEqual([
        { body: 'archive-1', force: false },
        { body: 'archive-2', force: true },
      ]);
    });

    it('refuses a restore without a body', async () => {
      const noBody = { status: 400, message: 'the snapshot is the request body: send the archive saved from sys/storage/raft/snapshot' };
      expect(await refusal(sys.write('storage/raft/snapshot'))).toEqual(noBody);
      expect(await refusal(sys.write('storage/raft/snapshot-force'))).toEqual(noBody);
      expect(restores).toEqual([]);
    });
  });

  describe('automated snapshot configurations', () => {
    it('creates, reads, lists and deletes configurations, filling in the defaults', async () => {
      expect(await sys.list(CONFIG)).toEqual([]);
      expect(await sys.write(`${CONFIG}daily`, LOCAL)).toEqual({});
      await sys.write(`${CONFIG}hourly`, { ...LOCAL, interval: 3600, retain: 24, file_prefix: 'hourly' });
      expect(await sys.read(`${CONFIG}daily`)).toEqual({ interval: 3600, retain: 1, path_prefix: '/var/backups', file_prefix: 'service-snapshot', storage_type: 'local', local_max_space: 1_000_000 });
      expect(await sys.read(`${CONFIG}hourly`)).toMatchObject({ retain: 24, file_prefix: 'hourly' });
      expect(await sys.list(CONFIG)).toEqual(['daily', 'hourly']);

      await stored.putJSON(STATUS_PREFIX + 'daily', { snapshot_start: '2025-01-01T00:00:00Z' });
      expect(await sys.request('delete', `${CONFIG}daily`)).toBeUndefined();
      expect(await sys.list(CONFIG)).toEqual(['hourly']);
      expect(await stored.getJSON(STATUS_PREFIX + 'daily')).toBeNull();
      expect(await refusal(sys.read(`${CONFIG}daily`))).toEqual({ status: 404, message: 'no automated snapshot configuration named "daily"' });
    });

    it('updates with only the fields that change, keeping credentials it never shows', async () => {
      const cloud = { interval: 60, path_prefix: 'snapshots/', storage_type: 'cloud-objstore', cloud_objstore_bucket: 'backups', cloud_objstore_region: 'eu-west-1', cloud_access_key_id: 'AKID', cloud_secret_access_key: 'secret' };
      await sys.write(`${CONFIG}cloud`, cloud);
      await sys.write(`${CONFIG}cloud`, { retain: 5, cloud_objstore_region: 'us-east-1' });
      const { cloud_secret_access_key: _secret, ...shown } = cloud;
      expect(await sys.read(`${CONFIG}cloud`)).toEqual({ ...shown, retain: 5, cloud_objstore_region: 'us-east-1', file_prefix: 'service-snapshot' });
      expect(await stored.getJSON(CONFIG_PREFIX + 'cloud')).toMatchObject({ cloud_secret_access_key: 'secret', retain: 5 });
    });

    it('refuses a configuration that is incomplete or mixes storage types, checked with the stored one merged', async () => {
      expect(await refusal(sys.write(`${CONFIG}daily`, { interval: 60 }))).toEqual({ status: 400, message: 'missing required field "storage_type"' });
      expect(await refusal(sys.write(`${CONFIG}daily`, { ...LOCAL, local_max_space: undefined }))).toEqual({ status: 400, message: 'missing required field "local_max_space" for storage_type local' });
      expect(await refusal(sys.write(`${CONFIG}daily`, { ...LOCAL, storage_type: 'floppy' }))).toMatchObject({ status: 400, message: expect.stringContaining('storage_type') });
      expect(await sys.list(CONFIG)).toEqual([]);

      await sys.write(`${CONFIG}daily`, LOCAL);
      expect(await refusal(sys.write(`${CONFIG}daily`, { cloudc_bucket: 'b' }))).toEqual({ status: 400, message: 'field "cloudc_bucket" does not apply to storage_type local' });
      expect(await refusal(sys.write(`${CONFIG}daily`, { interval: 0 }))).toEqual({ status: 400, message: 'interval must be greater than zero' });
      expect(await sys.read(`${CONFIG}daily`)).toMatchObject({ interval: 3600, storage_type: 'local' });
    });

    it("reads a configuration's status as the snapshot service wrote it; the zero status before its first run", async () => {
      await sys.write(`${CONFIG}daily`, LOCAL);
      const zero = '0001-01-01T00:00:00Z';
      expect(await sys.read('storage/raft/snapshot-auto/status/daily')).toEqual({
        snapshot_start: zero,
        snapshot_url: '',
        last_snapshot_start: zero,
        last_snapshot_end: zero,
        last_snapshot_error: '',
        last_snapshot_url: '',
      });
      const status = {
        snapshot_start: '2025-01-02T00:00:00Z',
        snapshot_url: 'file:///var/backups/b.snap',
        last_snapshot_start: '2025-01-01T00:00:00Z',
        last_snapshot_end: '2025-01-01T00:00:05Z',
        last_snapshot_error: '',
        last_snapshot_url: 'file:///var/backups/a.snap',
      };
      await stored.putJSON(STATUS_PREFIX + 'daily', { ...status, internal_attempt: 7 });
      expect(await sys.read('storage/raft/snapshot-auto/status/daily')).toEqual(status);
      expect(await refusal(sys.read('storage/raft/snapshot-auto/status/weekly'))).toEqual({ status: 404, message: 'no automated snapshot configuration named "weekly"' });
    });
  });

  it('serves sudo tokens of the root namespace; the status needs no sudo', () => {
    const sudo: [string, 'read' | 'update' | 'list' | 'delete'][] = [
      ['storage/raft/snapshot', 'read'],
      ['storage/raft/snapshot', 'update'],
      ['storage/raft/snapshot-force', 'update'],
      [CONFIG, 'list'],
      [`${CONFIG}daily`, 'read'],
      [`${CONFIG}daily`, 'update'],
      [`${CONFIG}daily`, 'delete'],
    ];
    for (const [path, operation] of sudo) expect(sys.backend.operationInfo(path, operation)).toMatchObject({ sudo: true, rootNamespace: true, unauthenticated: false });
    expect(sys.backend.operationInfo('storage/raft/snapshot-auto/status/daily', 'read')).toMatchObject({ sudo: false, rootNamespace: true });
  });
});
