/**
 * Issue 16, snapshots: sys/storage/raft/snapshot save and restore, and snapshot-force, in both
 * topologies. Distributed runs two gateways and a transit service: the restore goes to one gateway
 * and every answer afterwards is checked on both, so each replica (and the service's key cache)
 * must have dropped what it held.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createGunzip, createGzip } from 'node:zlib';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { extract, pack } from 'tar-stream';
import { Client } from 'pg';
import { api, assertingCalls, eventually, initAndUnseal, POSTGRES_URL, runCli, startTopology, type ApiResponse, type Topology, type TopologyKind } from '@svc/testing';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

/** GET sys/storage/raft/snapshot as bytes. */
async function download(url: string, token: string): Promise<{ status: number; type: string | null; bytes: Buffer }> {
  const res = await fetch(`${url}/v1/sys/storage/raft/snapshot`, { headers: { 'x-service-token': token } });
  return { status: res.status, type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) };
}

/** The archive's members and their bytes. */
async function members(archive: Buffer): Promise<Map<string, Buffer>> {
  const found = new Map<string, Buffer>();
  const tar = extract();
  tar.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
    stream.on('end', () => {
      found.set(header.name, Buffer.concat(chunks));
      next();
    });
  });
  await pipeline(Readable.from([archive]), createGunzip(), tar);
  return found;
}

/** An archive of `files`, in their order. */
async function repack(files: Map<string, Buffer>): Promise<Buffer> {
  const tar = pack();
  for (const [name, bytes] of files) tar.entry({ name }, bytes);
  tar.finalize();
  const chunks: Buffer[] = [];
  await pipeline(tar, createGzip(), async function* (source: AsyncIterable<Buffer>) {
    for await (const chunk of source) chunks.push(chunk);
  });
  return Buffer.concat(chunks);
}

/** Files of the CLI tests: snapshots, and HOME (so no stored token of the user's is read). */
const files = mkdtempSync(path.join(tmpdir(), 'svc-snapshot-cli-'));
afterAll(() => rmSync(files, { recursive: true, force: true }));

/** `svc operator raft snapshot ARGS` against the gateway at `url`. */
const snapshotCli = (url: string, token: string, ...args: string[]) => runCli(['operator', 'raft', 'snapshot', ...args], { SVC_ADDR: url, SVC_TOKEN: token, HOME: files });

const upload = (url: string, path: string, archive: Buffer | string, token: string): Promise<ApiResponse<Body>> =>
  api<Body>(url, 'POST', `/v1/sys/storage/raft/${path}`, { rawBody: archive, token, headers: { 'content-type': 'application/gzip' } });

/** Another installation (its own seal and keys; one gateway over PostgreSQL, quick to start), whose snapshot every topology is offered. */
let other: Topology;
let otherRoot: string;
let otherKeys: string[];

beforeAll(async () => {
  other = await startTopology('distributed');
  ({ rootToken: otherRoot, keys: otherKeys } = await initAndUnseal(other.urls[0]));
  const res = await api(other.urls[0], 'PUT', '/v1/secret/from-elsewhere', { body: { origin: 'other installation' }, token: otherRoot });
  expect(res.status).toBe(204);
}, 300_000);

afterAll(() => other?.stop());

describe.each<TopologyKind>(['all-in-one', 'distributed'])('snapshots, %s', (kind) => {
  let topology: Topology;
  let urls: string[];
  let root: string;
  let keys: string[];
  /** Calls to one gateway, with the root token unless another is given. */
  const at = (url: () => string) => {
    const call = (method: string, where: string, body?: unknown, token = root) => api<Body>(url(), method, `/v1/${where}`, { body, token });
    return { call, ...assertingCalls(call) };
  };
  const { ok, refused } = at(() => urls[0]);
  /** The same call on every gateway. */
  const onEveryGateway = async (check: (gateway: ReturnType<typeof at>) => Promise<void>) => {
    for (const url of urls) await check(at(() => url));
  };

  beforeAll(async () => {
    topology = await startTopology(kind, { gateways: 2, services: ['transit'] });
    urls = topology.urls;
    ({ rootToken: root, keys } = await initAndUnseal(urls[0]));
    await eventually(async () => (await api<Body>(urls[urls.length - 1], 'GET', '/v1/sys/seal-status')).body.sealed === false, 15_000);
  }, 300_000);

  afterAll(() => topology?.stop());

  test('save, write more, restore: every gateway and the transit service answer as at the snapshot', async () => {
    await ok('PUT', 'sys/mounts/transit', { type: 'transit' });
    await ok('PUT', 'transit/keys/app', {});
    const before = await ok('PUT', 'transit/encrypt/app', { plaintext: Buffer.from('at snapshot').toString('base64') });
    await ok('PUT', 'secret/app', { password: 'first-s3cret' });
    await ok('PUT', 'sys/policies/acl/readers', { policy: 'path "secret/*" { capabilities = ["read"] }' });
    const kept = (await ok('POST', 'auth/token/create', { policies: ['readers'] })).auth.client_token as string;

    const saved = await download(urls[0], root);
    expect([saved.status, saved.type]).toEqual([200, 'application/gzip']);
    const archive = await members(saved.bytes);
    expect([...archive.keys()]).toEqual(['meta.json', 'state.bin', 'SHA256SUMS', 'SHA256SUMS.sealed']);
    // Barrier ciphertext only: neither the secret nor the policy is readable in the archive.
    expect(archive.get('state.bin')!.includes('first-s3cret')).toBe(false);
    expect(archive.get('state.bin')!.includes('capabilities')).toBe(false);
    expect(archive.get('SHA256SUMS')!.toString()).toMatch(/^[0-9a-f]{64} {2}meta\.json\n[0-9a-f]{64} {2}state\.bin\n$/);

    // Everything changes after the snapshot, the transit key's cache included.
    await ok('PUT', 'secret/app', { password: 'second' });
    await ok('PUT', 'transit/keys/app/rotate', {});
    const after = await ok('PUT', 'transit/encrypt/app', { plaintext: Buffer.from('later').toString('base64') });
    expect(after.data.ciphertext).toMatch(/^svc:v2:/);
    await ok('DELETE', 'sys/policies/acl/readers');
    await ok('PUT', 'sys/policies/acl/later', { policy: 'path "secret/*" { capabilities = ["list"] }' });
    const later = (await ok('POST', 'auth/token/create', { policies: ['default'] })).auth.client_token as string;

    const restored = await upload(urls[urls.length - 1], 'snapshot', saved.bytes, root);
    expect([restored.status, restored.text]).toEqual([204, '']);

    await onEveryGateway(async (gateway) => {
      expect((await gateway.ok('GET', 'secret/app')).data).toEqual({ password: 'first-s3cret' });
      expect((await gateway.ok('GET', 'transit/keys/app')).data.latest_version).toBe(1);
      const opened = await gateway.ok('PUT', 'transit/decrypt/app', { ciphertext: before.data.ciphertext });
      expect(Buffer.from(opened.data.plaintext as string, 'base64').toString()).toBe('at snapshot');
      expect((await gateway.call('PUT', 'transit/decrypt/app', { ciphertext: after.data.ciphertext })).status).toBe(400);
      expect((await gateway.ok('GET', 'sys/policies/acl/readers')).data.name).toBe('readers');
      expect((await gateway.call('GET', 'sys/policies/acl/later')).status).toBe(404);
      // The token made before the snapshot works with its policy; the one made after no longer exists.
      expect((await gateway.ok('GET', 'secret/app', undefined, kept)).data).toEqual({ password: 'first-s3cret' });
      expect((await gateway.call('GET', 'auth/token/lookup-self', undefined, later)).status).toBe(403);
    });
    // The unseal keys in force are still the installation's.
    expect((await ok('GET', 'sys/seal-status', undefined, undefined)).sealed).toBe(false);
  });

  test('svc operator raft snapshot save and restore bring the state back; another installation\'s snapshot is refused without -force', async () => {
    await ok('PUT', 'secret/cli', { value: 'at snapshot' });
    const file = path.join(files, `${kind}.snap`);
    const saved = await snapshotCli(urls[0], root, 'save', file);
    expect([saved.code, saved.stdout, saved.stderr]).toEqual([0, `Success! Snapshot saved to ${file}.\n`, '']);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(files).filter((name) => name.startsWith(kind))).toEqual([`${kind}.snap`]);
    expect([...(await members(readFileSync(file))).keys()]).toEqual(['meta.json', 'state.bin', 'SHA256SUMS', 'SHA256SUMS.sealed']);

    await ok('PUT', 'secret/cli', { value: 'later' });
    await ok('PUT', 'secret/cli-later', { value: 'written after the snapshot' });
    const restored = await snapshotCli(urls[urls.length - 1], root, 'restore', file);
    expect([restored.code, restored.stdout, restored.stderr]).toEqual([0, 'Success! Snapshot restored.\n', '']);
    await onEveryGateway(async (gateway) => {
      expect((await gateway.ok('GET', 'secret/cli')).data).toEqual({ value: 'at snapshot' });
      expect((await gateway.call('GET', 'secret/cli-later')).status).toBe(404);
    });

    const foreign = path.join(files, `${kind}-other.snap`);
    expect((await snapshotCli(other.urls[0], otherRoot, 'save', foreign)).code).toBe(0);
    const refusedRestore = await snapshotCli(urls[0], root, 'restore', foreign);
    expect(refusedRestore.code).toBe(2);
    expect(refusedRestore.stderr).toMatch(/^Error: POST \S*sys\/storage\/raft\/snapshot answered status 400\n\* .*different set of unseal keys; use the snapshot-force API/);
    expect((await ok('GET', 'secret/cli')).data).toEqual({ value: 'at snapshot' });
  });

  test('a bad or unauthorized restore is refused and changes nothing', async () => {
    await ok('PUT', 'secret/untouched', { value: 'kept' });
    const saved = await download(urls[0], root);
    const reader = (await ok('POST', 'auth/token/create', { policies: ['default'] })).auth.client_token as string;
    expect((await download(urls[0], reader)).status).toBe(403);
    expect((await upload(urls[0], 'snapshot', saved.bytes, reader)).status).toBe(403);

    await refused('POST', 'sys/storage/raft/snapshot', undefined, 400, /invalid snapshot: the body is not a gzip-compressed tar archive/);
    for (const body of ['not an archive', saved.bytes.subarray(0, saved.bytes.length - 100)]) {
      const res = await upload(urls[0], 'snapshot', body, root);
      expect([res.status, res.body.errors.join()]).toEqual([400, expect.stringMatching(/^invalid snapshot: /)]);
    }
    // One byte of the state changed: the checksums no longer match.
    const files = await members(saved.bytes);
    files.get('state.bin')![10] ^= 1;
    const altered = await upload(urls[0], 'snapshot', await repack(files), root);
    expect([altered.status, altered.body.errors]).toEqual([400, ['invalid snapshot: the checksums in SHA256SUMS do not match the archive (altered or damaged)']]);
    const extra = await upload(urls[0], 'snapshot', await repack(new Map([...(await members(saved.bytes)), ['extra.txt', Buffer.from('x')]])), root);
    expect([extra.status, extra.body.errors]).toEqual([400, ['invalid snapshot: unexpected member "extra.txt" in the archive']]);
    expect((await ok('GET', 'secret/untouched')).data).toEqual({ value: 'kept' });
  });

  test('another installation\'s snapshot is refused; forced, the cluster seals and opens with that snapshot\'s keys', async () => {
    const foreign = await download(other.urls[0], otherRoot);
    expect(foreign.status).toBe(200);
    const res = await upload(urls[0], 'snapshot', foreign.bytes, root);
    expect([res.status, res.body.errors.join()]).toEqual([400, expect.stringMatching(/different set of unseal keys; use the snapshot-force API/)]);
    expect((await ok('GET', 'secret/app')).data).toEqual({ password: 'first-s3cret' });

    const foreignFile = path.join(files, `${kind}-forced.snap`);
    writeFileSync(foreignFile, foreign.bytes);
    const forced = await snapshotCli(urls[0], root, 'restore', '-force', foreignFile);
    expect([forced.code, forced.stdout]).toEqual([0, "Success! Snapshot restored; the service is sealed until unsealed with that snapshot's keys.\n"]);
    await eventually(async () => (await Promise.all(urls.map((url) => api<Body>(url, 'GET', '/v1/sys/seal-status')))).every((status) => status.body.sealed === true), 15_000);
    const withOwnKeys = await api<Body>(urls[0], 'PUT', '/v1/sys/unseal', { body: { key: keys[0] } });
    expect(withOwnKeys.status).toBe(400);
    expect((await api<Body>(urls[0], 'PUT', '/v1/sys/unseal', { body: { key: otherKeys[0] } })).body.sealed).toBe(false);
    await onEveryGateway(async (gateway) => {
      await eventually(async () => (await gateway.call('GET', 'secret/from-elsewhere', undefined, otherRoot)).status === 200, 15_000);
      expect((await gateway.ok('GET', 'secret/from-elsewhere', undefined, otherRoot)).data).toEqual({ origin: 'other installation' });
      expect((await gateway.call('GET', 'secret/app', undefined, otherRoot)).status).toBe(404);
    });
  });
});

describe('snapshots, distributed: a storage much larger than the stream buffers', () => {
  /** The storage's size: many times the buffers between the cursor and the socket (a 500-row fetch, 16 KiB stream chunks). */
  const ROWS = 64_000;
  const VALUE_BYTES = 4_096;
  const MiB = 1024 * 1024;
  /**
   * Growth of the gateway's resident memory allowed during the save: well under the storage's size.
   * The collector lets garbage pile up to its heap limit first (about 80 MiB here, for 50 MiB as for
   * 250 MiB of storage); a save holding the storage in memory would grow by more than 250 MiB.
   */
  const MAX_GROWTH = 160 * MiB;
  let topology: Topology;
  let root: string;

  beforeAll(async () => {
    topology = await startTopology('distributed');
    ({ rootToken: root } = await initAndUnseal(topology.urls[0]));
  }, 300_000);

  afterAll(() => topology?.stop());

  const residentBytes = (pid: number) => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

  /** Reads the snapshot to its end without keeping it; the gateway's peak resident memory meanwhile, sampled from /proc. */
  async function streamedSave(pid: number): Promise<{ status: number; bytes: number; peak: number }> {
    let peak = residentBytes(pid);
    const sampler = setInterval(() => (peak = Math.max(peak, residentBytes(pid))), 20);
    try {
      const res = await fetch(`${topology.urls[0]}/v1/sys/storage/raft/snapshot`, { headers: { 'x-service-token': root } });
      let bytes = 0;
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
      return { status: res.status, bytes, peak: Math.max(peak, residentBytes(pid)) };
    } finally {
      clearInterval(sampler);
    }
  }

  test('the save completes with the gateway\'s memory growth bounded, not proportional to the storage', async () => {
    const pid = topology.processes[0].child.pid!;
    // One save first, so the code it runs is loaded before the baseline is taken.
    expect((await streamedSave(pid)).status).toBe(200);
    const client = new Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      for (let first = 0; first < ROWS; first += 1_000) {
        const names = Array.from({ length: 1_000 }, (_, i) => `row-${first + i}`);
        await client.query(`INSERT INTO ${topology.storageTable} (parent_path, name, value) SELECT '/filler/', * FROM unnest($1::text[], $2::bytea[])`, [names, names.map(() => randomBytes(VALUE_BYTES))]);
      }
    } finally {
      await client.end();
    }
    const baseline = residentBytes(pid);
    const saved = await streamedSave(pid);
    expect(saved.status).toBe(200);
    // Random values do not compress: the archive is at least the storage.
    expect(saved.bytes).toBeGreaterThan(ROWS * VALUE_BYTES);
    expect(saved.peak - baseline).toBeLessThan(MAX_GROWTH);
  }, 600_000);
});
