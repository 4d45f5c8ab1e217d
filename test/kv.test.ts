/**
 * Issue 4 end to end: the key/value engine (versions 1 and 2) through the gateway's HTTP API, in
 * both topologies. The distributed topology runs two gateway replicas on PostgreSQL, so the
 * concurrent check-and-set test fires at both at once.
 */
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { api, eventually, initAndUnseal, startTopology, type ApiBody, type ApiResponse, type Topology, type TopologyKind } from '@svc/testing';

interface VersionMetadata {
  created_time: string;
  custom_metadata: Record<string, string> | null;
  deletion_time: string;
  destroyed: boolean;
  version: number;
}

/** Error bodies carry `errors`, success bodies `data`; one type serves both, as in ApiBody. */
interface SecretBody {
  data: { data: Record<string, unknown> | null; metadata: VersionMetadata };
  errors: string[];
}

interface WriteBody {
  data: VersionMetadata;
  errors: string[];
}

interface KeyMetadataBody {
  data: {
    versions: Record<string, { created_time: string; deletion_time: string; destroyed: boolean }>;
    current_version: number;
    oldest_version: number;
    max_versions: number;
    cas_required: boolean;
    delete_version_after: string;
    custom_metadata: Record<string, string> | null;
  };
}

interface ListBody {
  data: { keys: string[] };
}

/** A marker in every secret value, so the logs can be searched for leaks at the end. */
const SECRET = `s3cret-${randomBytes(6).toString('hex')}`;
const MERGE_PATCH = { 'content-type': 'application/merge-patch+json' };

/**
 * A request whose path goes on the wire exactly as written: `api` resolves it with the URL parser,
 * which would normalize '..' segments away before the server sees them. Reuses connections through
 * `agent` for bulk writes.
 */
function rawRequest(baseUrl: string, method: string, path: string, options: { token: string; body?: unknown; agent?: Agent }): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(baseUrl);
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string | number> = { 'x-service-token': options.token };
  if (payload !== undefined) headers['content-length'] = Buffer.byteLength(payload);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, method, path, headers, agent: options.agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('kv, %s', (kind) => {
  let topology: Topology;
  /** Every gateway; the distributed topology has two replicas. */
  let urls: string[];
  let url: string;
  let root: string;

  type Options = { token?: string; headers?: Record<string, string>; at?: string };
  const call = <T = ApiBody>(method: string, path: string, body?: unknown, options: Options = {}): Promise<ApiResponse<T>> =>
    api<T>(options.at ?? url, method, `/v1/${path}`, { token: options.token ?? root, body, headers: options.headers });

  const mount = async (path: string, version: '1' | '2', headers?: Record<string, string>) => {
    const res = await call('POST', `sys/mounts/${path}`, { type: 'kv', options: { version } }, { headers });
    expect([res.status, res.text]).toEqual([204, '']);
  };
  const write = (mountPath: string, key: string, data: Record<string, unknown>, options?: Record<string, unknown>) =>
    call<WriteBody>('PUT', `${mountPath}/data/${key}`, options ? { data, options } : { data });
  const read = (mountPath: string, key: string, version?: number | string) =>
    call<SecretBody>('GET', `${mountPath}/data/${key}${version === undefined ? '' : `?version=${version}`}`);
  const metadata = (mountPath: string, key: string) => call<KeyMetadataBody>('GET', `${mountPath}/metadata/${key}`);
  const tokenWithPolicy = async (name: string, policy: string, headers?: Record<string, string>) => {
    const put = await call('PUT', `sys/policies/acl/${name}`, { policy }, { headers });
    expect([put.status, put.text]).toEqual([204, '']);
    const created = await call<{ auth: { client_token: string } }>('POST', 'auth/token/create', { policies: [name] }, { headers });
    expect(created.status).toBe(200);
    return created.body.auth.client_token;
  };

  beforeAll(async () => {
    topology = await startTopology(kind, { gateways: kind === 'distributed' ? 2 : 1 });
    urls = topology.urls;
    url = urls[0];
    ({ rootToken: root } = await initAndUnseal(url));
  }, 120_000);

  afterAll(() => topology?.stop());

  describe('version 1', () => {
    beforeAll(() => mount('plain', '1'));

    test('PUT and POST store the body; GET reads it; DELETE removes it', async () => {
      expect((await call('PUT', 'plain/app/db', { password: SECRET })).status).toBe(204);
      expect((await call('POST', 'plain/app/api', { token: SECRET, ttl: 3 })).status).toBe(204);
      const db = await call('GET', 'plain/app/db');
      expect([db.status, db.body.data]).toEqual([200, { password: SECRET }]);
      expect((await call('GET', 'plain/app/api')).body.data).toEqual({ token: SECRET, ttl: 3 });

      expect((await call('POST', 'plain/app/db', { user: 'admin' })).status).toBe(204);
      expect((await call('GET', 'plain/app/db')).body.data).toEqual({ user: 'admin' });
      expect((await call('DELETE', 'plain/app/db')).status).toBe(204);
      expect((await call('GET', 'plain/app/db')).status).toBe(404);
    });

    test('LIST works on directories only: sub-directories end in "/", an empty or leaf LIST is 404', async () => {
      for (const key of ['dir/one', 'dir/two', 'dir/sub/three', 'leaf']) expect((await call('PUT', `plain/${key}`, { v: SECRET })).status).toBe(204);
      const listed = await call<ListBody>('LIST', 'plain/dir/');
      expect([listed.status, listed.body.data.keys]).toEqual([200, ['one', 'sub/', 'two']]);
      expect((await call<ListBody>('GET', 'plain/dir/?list=true')).body.data.keys).toEqual(['one', 'sub/', 'two']);
      expect((await call<ListBody>('LIST', 'plain/')).body.data.keys).toEqual(expect.arrayContaining(['app/', 'dir/', 'leaf']));
      expect((await call('LIST', 'plain/leaf')).status).toBe(404);
      expect((await call('LIST', 'plain/nothing-here/')).status).toBe(404);
    });
  });

  describe('version 2', () => {
    beforeAll(() => mount('kv', '2'));

    test('write and read answer in Vault\'s shapes: data.data and data.metadata; ?version=N reads an older version', async () => {
      const first = await write('kv', 'shape', { password: SECRET });
      expect(first.status).toBe(200);
      expect(first.body.data).toEqual({ created_time: expect.any(String), custom_metadata: null, deletion_time: '', destroyed: false, version: 1 });
      expect(Date.parse(first.body.data.created_time)).not.toBeNaN();
      expect((await write('kv', 'shape', { password: 'second' })).body.data.version).toBe(2);

      const latest = await read('kv', 'shape');
      expect(latest.status).toBe(200);
      expect(latest.body.data).toEqual({
        data: { password: 'second' },
        metadata: { created_time: expect.any(String), custom_metadata: null, deletion_time: '', destroyed: false, version: 2 },
      });
      const older = await read('kv', 'shape', 1);
      expect(older.body.data).toEqual({ data: { password: SECRET }, metadata: first.body.data });
      expect((await read('kv', 'shape', 3)).status).toBe(404);
      expect((await read('kv', 'never-written')).status).toBe(404);
    });

    test('PATCH merges a JSON merge patch into the latest version; it needs the merge-patch content type and an existing key', async () => {
      await write('kv', 'patched', { user: 'app', password: SECRET, nested: { a: 1, b: 2 } });
      const patched = await call<WriteBody>('PATCH', 'kv/data/patched', { data: { password: null, nested: { b: 3 }, added: true } }, { headers: MERGE_PATCH });
      expect([patched.status, patched.body.data.version]).toEqual([200, 2]);
      expect((await read('kv', 'patched')).body.data.data).toEqual({ user: 'app', nested: { a: 1, b: 3 }, added: true });

      const plainJson = await call('PATCH', 'kv/data/patched', { data: { user: 'x' } });
      expect(plainJson.status).toBe(415);
      expect(plainJson.body.errors[0]).toMatch(/merge-patch\+json/);
      expect((await call('PATCH', 'kv/data/no-such-key', { data: { a: 1 } }, { headers: MERGE_PATCH })).status).toBe(404);
      expect((await metadata('kv', 'patched')).body.data.current_version).toBe(2);
    });

    test('DELETE soft-deletes the latest version: a read is 404 with the version metadata in data; older versions stay', async () => {
      await write('kv', 'soft', { v: 1 });
      await write('kv', 'soft', { v: 2 });
      expect((await call('DELETE', 'kv/data/soft')).status).toBe(204);
      const deleted = await read('kv', 'soft');
      expect(deleted.status).toBe(404);
      expect(deleted.body.data.data).toBeNull();
      expect(deleted.body.data.metadata).toMatchObject({ version: 2, destroyed: false, deletion_time: expect.stringMatching(/^\d{4}-/) });
      expect((await read('kv', 'soft', 1)).body.data.data).toEqual({ v: 1 });
    });

    test('delete/, undelete/ and destroy/ act on the listed versions (array or comma-separated string)', async () => {
      for (let i = 1; i <= 3; i++) await write('kv', 'versions', { v: i });
      expect((await call('POST', 'kv/delete/versions', { versions: [1, 2] })).status).toBe(204);
      expect((await read('kv', 'versions', 1)).status).toBe(404);
      expect((await read('kv', 'versions', 2)).status).toBe(404);
      expect((await read('kv', 'versions', 3)).body.data.data).toEqual({ v: 3 });

      expect((await call('POST', 'kv/undelete/versions', { versions: '1' })).status).toBe(204);
      expect((await read('kv', 'versions', 1)).body.data.data).toEqual({ v: 1 });

      expect((await call('POST', 'kv/destroy/versions', { versions: '2,3' })).status).toBe(204);
      const destroyed = await read('kv', 'versions', 3);
      expect([destroyed.status, destroyed.body.data.data, destroyed.body.data.metadata.destroyed]).toEqual([404, null, true]);
      expect((await call('POST', 'kv/undelete/versions', { versions: [2, 3] })).status).toBe(204);
      expect((await read('kv', 'versions', 2)).status).toBe(404);

      const states = (await metadata('kv', 'versions')).body.data.versions;
      expect(states['1']).toMatchObject({ deletion_time: '', destroyed: false });
      expect(states['2']).toMatchObject({ destroyed: true });
      expect(states['3']).toMatchObject({ destroyed: true });
      const missingVersions = await call('POST', 'kv/destroy/versions', {});
      expect(missingVersions.status).toBe(400);
      expect(missingVersions.body.errors[0]).toMatch(/versions/);
    });

    test('metadata/: write, read, PATCH (custom metadata merges), LIST directories, delete removes every version', async () => {
      await write('kv', 'meta/app/one', { v: SECRET });
      await write('kv', 'meta/app/two', { v: SECRET });
      await write('kv', 'meta/top', { v: SECRET });
      const configured = await call('POST', 'kv/metadata/meta/app/one', { max_versions: 5, cas_required: true, delete_version_after: '1h', custom_metadata: { owner: 'team-a', tier: 'gold' } });
      expect(configured.status).toBe(204);
      const described = await metadata('kv', 'meta/app/one');
      expect(described.body.data).toMatchObject({
        current_version: 1,
        oldest_version: 0,
        max_versions: 5,
        cas_required: true,
        delete_version_after: '1h0m0s',
        custom_metadata: { owner: 'team-a', tier: 'gold' },
        versions: { '1': { created_time: expect.any(String), deletion_time: '', destroyed: false } },
      });

      const patched = await call('PATCH', 'kv/metadata/meta/app/one', { custom_metadata: { tier: null, region: 'eu' }, max_versions: 7 }, { headers: MERGE_PATCH });
      expect(patched.status).toBe(204);
      expect((await metadata('kv', 'meta/app/one')).body.data).toMatchObject({ custom_metadata: { owner: 'team-a', region: 'eu' }, max_versions: 7, cas_required: true });
      expect((await read('kv', 'meta/app/one')).body.data.metadata.custom_metadata).toEqual({ owner: 'team-a', region: 'eu' });
      expect((await call('PATCH', 'kv/metadata/meta/none', { max_versions: 1 }, { headers: MERGE_PATCH })).status).toBe(404);

      expect((await call<ListBody>('LIST', 'kv/metadata/meta/')).body.data.keys).toEqual(['app/', 'top']);
      expect((await call<ListBody>('LIST', 'kv/metadata/meta/app/')).body.data.keys).toEqual(['one', 'two']);
      expect((await call('LIST', 'kv/metadata/meta/empty/')).status).toBe(404);

      expect((await call('DELETE', 'kv/metadata/meta/app/two')).status).toBe(204);
      expect((await read('kv', 'meta/app/two')).status).toBe(404);
      expect((await metadata('kv', 'meta/app/two')).status).toBe(404);
      expect((await call<ListBody>('LIST', 'kv/metadata/meta/app/')).body.data.keys).toEqual(['one']);
    });

    test('subkeys/ returns the structure without values, honouring version and depth', async () => {
      await write('kv', 'tree', { a: SECRET, b: { c: SECRET, d: { e: SECRET } }, empty: {} });
      await write('kv', 'tree', { only: SECRET });
      const all = await call<{ data: { subkeys: unknown; metadata: VersionMetadata } }>('GET', 'kv/subkeys/tree?version=1');
      expect(all.body.data.subkeys).toEqual({ a: null, b: { c: null, d: { e: null } }, empty: null });
      expect(all.body.data.metadata.version).toBe(1);
      expect(all.text).not.toContain(SECRET);
      expect((await call<{ data: { subkeys: unknown } }>('GET', 'kv/subkeys/tree?version=1&depth=1')).body.data.subkeys).toEqual({ a: null, b: null, empty: null });
      expect((await call<{ data: { subkeys: unknown } }>('GET', 'kv/subkeys/tree?version=1&depth=2')).body.data.subkeys).toEqual({ a: null, b: { c: null, d: null }, empty: null });
      expect((await call<{ data: { subkeys: unknown } }>('GET', 'kv/subkeys/tree')).body.data.subkeys).toEqual({ only: null });
      expect((await call('GET', 'kv/subkeys/tree?depth=-1')).status).toBe(400);
    });

    test('check-and-set: cas 0 only creates, a stale cas is a 400, cas_required refuses writes without cas', async () => {
      expect((await write('kv', 'cas', { v: 1 }, { cas: 0 })).status).toBe(200);
      const again = await write('kv', 'cas', { v: 'again' }, { cas: 0 });
      expect(again.status).toBe(400);
      expect(again.body).toEqual({ errors: ['check-and-set parameter did not match the current version'] });
      expect((await write('kv', 'cas', { v: 2 }, { cas: 1 })).body.data.version).toBe(2);
      expect((await write('kv', 'cas', { v: 'stale' }, { cas: 1 })).status).toBe(400);
      expect((await read('kv', 'cas')).body.data.data).toEqual({ v: 2 });

      expect((await call('POST', 'kv/metadata/cas', { cas_required: true })).status).toBe(204);
      const withoutCas = await write('kv', 'cas', { v: 'no cas' });
      expect(withoutCas.status).toBe(400);
      expect(withoutCas.body.errors[0]).toMatch(/check-and-set parameter required/);
      expect((await write('kv', 'cas', { v: 3 }, { cas: 2 })).body.data.version).toBe(3);
    });

    test('concurrent writers with the same cas: exactly one succeeds (spread over every gateway replica)', async () => {
      // In the distributed topology the writers alternate between the two gateways, which share
      // PostgreSQL: the key's lock must hold across processes, not only within one.
      const writers = 24;
      for (const cas of [0, 1]) {
        const outcomes = await Promise.all(
          Array.from({ length: writers }, (_, writer) =>
            call<WriteBody>('PUT', 'kv/data/race', { data: { writer }, options: { cas } }, { at: urls[writer % urls.length] }),
          ),
        );
        const winners = outcomes.flatMap((outcome, writer) => (outcome.status === 200 ? [writer] : []));
        expect(winners).toHaveLength(1);
        expect(outcomes.filter((outcome) => outcome.status === 400)).toHaveLength(writers - 1);
        const latest = await read('kv', 'race');
        expect(latest.body.data).toMatchObject({ data: { writer: winners[0] }, metadata: { version: cas + 1 } });
      }
    });

    test('max_versions prunes the oldest versions, at write time and when it is lowered', async () => {
      expect((await call('POST', 'kv/metadata/pruned', { max_versions: 3 })).status).toBe(204);
      for (let i = 1; i <= 5; i++) await write('kv', 'pruned', { v: i });
      let described = await metadata('kv', 'pruned');
      expect(Object.keys(described.body.data.versions)).toEqual(['3', '4', '5']);
      expect(described.body.data.oldest_version).toBe(3);
      expect((await read('kv', 'pruned', 2)).status).toBe(404);
      expect((await read('kv', 'pruned', 3)).body.data.data).toEqual({ v: 3 });

      expect((await call('POST', 'kv/metadata/pruned', { max_versions: 1 })).status).toBe(204);
      described = await metadata('kv', 'pruned');
      expect([Object.keys(described.body.data.versions), described.body.data.oldest_version]).toEqual([['5'], 5]);
      expect((await read('kv', 'pruned', 4)).status).toBe(404);
    });

    test('delete_version_after: a version reads as deleted once its lifetime has passed', async () => {
      expect((await call('POST', 'kv/metadata/short-lived', { delete_version_after: '1s' })).status).toBe(204);
      const written = await write('kv', 'short-lived', { v: SECRET });
      const expiry = Date.parse(written.body.data.created_time) + 1_000;
      expect(Date.parse(written.body.data.deletion_time)).toBe(expiry);
      await eventually(async () => (await read('kv', 'short-lived')).status === 404, 10_000, 100);
      expect(Date.now()).toBeGreaterThanOrEqual(expiry);
      const expired = await read('kv', 'short-lived');
      expect(expired.body.data).toEqual({ data: null, metadata: written.body.data });
    });

    test('config: mount-wide max_versions, cas_required and delete_version_after', async () => {
      await mount('configured', '2');
      expect((await call('GET', 'configured/config')).body.data).toEqual({ max_versions: 0, cas_required: false, delete_version_after: '0s' });
      expect((await call('POST', 'configured/config', { max_versions: 2, cas_required: true, delete_version_after: '90m' })).status).toBe(204);
      expect((await call('GET', 'configured/config')).body.data).toEqual({ max_versions: 2, cas_required: true, delete_version_after: '1h30m0s' });

      expect((await write('configured', 'k', { v: 0 })).status).toBe(400);
      for (let cas = 0; cas < 3; cas++) expect((await write('configured', 'k', { v: cas }, { cas })).status).toBe(200);
      const described = await metadata('configured', 'k');
      expect(Object.keys(described.body.data.versions)).toEqual(['2', '3']);
      const created = described.body.data.versions['3'];
      expect(Date.parse(created.deletion_time) - Date.parse(created.created_time)).toBe(90 * 60 * 1000);
    });

    test('deep paths: 50 segments write, read, list and delete', async () => {
      const segments = Array.from({ length: 50 }, (_, i) => `level${i}`);
      const deep = segments.join('/');
      await write('kv', deep, { v: 1 });
      expect((await write('kv', deep, { v: 2 })).body.data.version).toBe(2);
      expect((await read('kv', deep, 1)).body.data.data).toEqual({ v: 1 });
      expect((await call<ListBody>('LIST', `kv/metadata/${segments.slice(0, -1).join('/')}/`)).body.data.keys).toEqual(['level49']);
      expect((await call<ListBody>('LIST', `kv/metadata/${segments.slice(0, 10).join('/')}`)).body.data.keys).toEqual(['level10/']);
      expect((await call('DELETE', `kv/metadata/${deep}`)).status).toBe(204);
      expect((await read('kv', deep)).status).toBe(404);

      expect((await call('PUT', `plain/${deep}`, { v: 1 })).status).toBe(204);
      expect((await call('GET', `plain/${deep}`)).body.data).toEqual({ v: 1 });
    });
  });

  test('tuning a version 1 mount to version 2 upgrades it in place; reads keep working on every gateway', async () => {
    await mount('upgraded', '1');
    expect((await call('PUT', 'upgraded/app/db', { password: SECRET })).status).toBe(204);
    expect((await call('PUT', 'upgraded/top', { v: 1 })).status).toBe(204);

    const tuned = await call('POST', 'sys/mounts/upgraded/tune', { options: { version: '2' } });
    expect(tuned.status).toBe(204);
    expect((await call<{ data: { options: Record<string, string> } }>('GET', 'sys/mounts/upgraded/tune')).body.data.options).toEqual({ version: '2' });
    for (const at of urls) {
      await eventually(async () => (await call('GET', 'upgraded/data/app/db', undefined, { at })).status === 200);
      const upgraded = await call<SecretBody>('GET', 'upgraded/data/app/db', undefined, { at });
      expect(upgraded.body.data).toMatchObject({ data: { password: SECRET }, metadata: { version: 1, destroyed: false } });
      expect((await call<ListBody>('LIST', 'upgraded/metadata/', undefined, { at })).body.data.keys).toEqual(['app/', 'top']);
    }
    expect((await write('upgraded', 'app/db', { password: 'rotated' }, { cas: 1 })).body.data.version).toBe(2);
    expect((await read('upgraded', 'app/db', 1)).body.data.data).toEqual({ password: SECRET });
  });

  describe('policies on the full API paths', () => {
    beforeAll(async () => {
      await mount('pol', '2');
      await write('pol', 'app/existing', { v: SECRET });
    });

    test('a read-only token reads data but cannot write, delete, list or read metadata', async () => {
      const token = await tokenWithPolicy('kv-read', 'path "pol/data/app/*" { capabilities = ["read"] }');
      expect((await call('GET', 'pol/data/app/existing', undefined, { token })).status).toBe(200);
      expect((await call('PUT', 'pol/data/app/existing', { data: { v: 'x' } }, { token })).status).toBe(403);
      expect((await call('DELETE', 'pol/data/app/existing', undefined, { token })).status).toBe(403);
      expect((await call('LIST', 'pol/metadata/app/', undefined, { token })).status).toBe(403);
      expect((await call('GET', 'pol/metadata/app/existing', undefined, { token })).status).toBe(403);
      expect((await metadata('pol', 'app/existing')).body.data.current_version).toBe(1);
    });

    test('a list-only token lists metadata directories and reads nothing', async () => {
      const token = await tokenWithPolicy('kv-list', 'path "pol/metadata/app/*" { capabilities = ["list"] }');
      const listed = await call<ListBody>('LIST', 'pol/metadata/app/', undefined, { token });
      expect([listed.status, listed.body.data.keys]).toEqual([200, ['existing']]);
      expect((await call('GET', 'pol/data/app/existing', undefined, { token })).status).toBe(403);
      expect((await call('GET', 'pol/metadata/app/existing', undefined, { token })).status).toBe(403);
    });

    test('a patch-only token patches but cannot read or write whole versions', async () => {
      const token = await tokenWithPolicy('kv-patch', 'path "pol/data/app/*" { capabilities = ["patch"] }');
      const patched = await call('PATCH', 'pol/data/app/existing', { data: { extra: 1 } }, { token, headers: MERGE_PATCH });
      expect(patched.status).toBe(200);
      expect((await call('PUT', 'pol/data/app/existing', { data: { v: 'x' } }, { token })).status).toBe(403);
      expect((await call('GET', 'pol/data/app/existing', undefined, { token })).status).toBe(403);
      expect((await read('pol', 'app/existing')).body.data.data).toEqual({ v: SECRET, extra: 1 });
    });

    test('create versus update: an update-only token is refused on a missing key and allowed on an existing one', async () => {
      const token = await tokenWithPolicy('kv-update', 'path "pol/data/app/*" { capabilities = ["update"] }');
      expect((await call('PUT', 'pol/data/app/missing', { data: { v: 1 } }, { token })).status).toBe(403);
      expect((await read('pol', 'app/missing')).status).toBe(404);
      const before = (await metadata('pol', 'app/existing')).body.data.current_version;
      const updated = await call<WriteBody>('PUT', 'pol/data/app/existing', { data: { v: 'updated' } }, { token });
      expect([updated.status, updated.body.data.version]).toEqual([200, before + 1]);

      const creator = await tokenWithPolicy('kv-create', 'path "pol/data/app/*" { capabilities = ["create"] }');
      expect((await call('PUT', 'pol/data/app/created', { data: { v: 1 } }, { token: creator })).status).toBe(200);
      expect((await call('PUT', 'pol/data/app/created', { data: { v: 2 } }, { token: creator })).status).toBe(403);
    });
  });

  test('kv in a child namespace: header, full path and split forms are equivalent; a child token cannot reach the root\'s secret/', async () => {
    expect((await call('POST', 'sys/namespaces/team')).status).toBe(200);
    expect((await call('POST', 'sys/namespaces/ops', undefined, { headers: { 'x-service-namespace': 'team' } })).status).toBe(200);
    await mount('secret', '2', { 'x-service-namespace': 'team' });
    await mount('secret', '2', { 'x-service-namespace': 'team/ops' });
    expect((await call('PUT', 'team/secret/data/app', { data: { v: SECRET } })).status).toBe(200);
    expect((await call('PUT', 'secret/data/app', { data: { v: 'ops' } }, { headers: { 'x-service-namespace': 'team/ops' } })).status).toBe(200);

    const forms: [string, Record<string, string>, string, unknown][] = [
      ['team', { 'x-service-namespace': 'team' }, 'secret/data/app', { v: SECRET }],
      ['team', {}, 'team/secret/data/app', { v: SECRET }],
      ['team/ops', { 'x-service-namespace': 'team/ops' }, 'secret/data/app', { v: 'ops' }],
      ['team/ops', {}, 'team/ops/secret/data/app', { v: 'ops' }],
      ['team/ops', { 'x-service-namespace': 'team' }, 'ops/secret/data/app', { v: 'ops' }],
    ];
    for (const [namespace, headers, path, expected] of forms) {
      const res = await call<SecretBody>('GET', path, undefined, { headers, at: urls[urls.length - 1] });
      expect([namespace, path, res.status, res.body.data.data]).toEqual([namespace, path, 200, expected]);
    }
    expect((await call<ListBody>('LIST', 'team/secret/metadata/')).body.data.keys).toEqual(['app']);

    // The root namespace keeps its own secret/ (version 1 outside dev mode).
    expect((await call('PUT', 'secret/root-only', { v: SECRET })).status).toBe(204);
    const team = { 'x-service-namespace': 'team' };
    const teamToken = await tokenWithPolicy('everything', 'path "*" { capabilities = ["create", "read", "update", "patch", "delete", "list"] }', team);
    expect((await call('GET', 'secret/data/app', undefined, { token: teamToken, headers: team })).status).toBe(200);
    expect((await call('GET', 'secret/root-only', undefined, { token: teamToken })).status).toBe(403);
    expect((await call('PUT', 'secret/root-only', { v: 'overwritten' }, { token: teamToken })).status).toBe(403);
    expect((await call('GET', 'secret/root-only')).body.data).toEqual({ v: SECRET });
  });

  describe('bad input is a clear 4xx and writes nothing', () => {
    beforeAll(async () => {
      await mount('strict', '2');
      await write('strict', 'kept', { v: SECRET });
    });

    const expectUnchanged = async () => {
      expect((await metadata('strict', 'kept')).body.data.current_version).toBe(1);
      expect((await call<ListBody>('LIST', 'strict/metadata/')).body.data.keys).toEqual(['kept']);
    };

    test.each<[string, unknown, RegExp]>([
      ['data is a string', { data: 'not a map' }, /"data"/],
      ['data is an array', { data: [1, 2] }, /"data"/],
      ['data is missing', { options: { cas: 1 } }, /"data"/],
      ['cas is a string', { data: { v: 1 }, options: { cas: 'one' } }, /options\.cas/],
      ['cas is negative', { data: { v: 1 }, options: { cas: -1 } }, /options\.cas/],
      ['options is not a map', { data: { v: 1 }, options: 'cas' }, /"options"/],
    ])('a write where %s', async (_, body, message) => {
      for (const key of ['kept', 'fresh']) {
        const res = await call('PUT', `strict/data/${key}`, body);
        expect(res.status).toBe(400);
        expect(res.body.errors.join(' ')).toMatch(message);
      }
      await expectUnchanged();
    });

    test('a bad version on read', async () => {
      for (const version of ['abc', '-1', '1.5']) {
        const res = await read('strict', 'kept', version);
        expect(res.status).toBe(400);
        expect(res.body.errors.join(' ')).toMatch(/version/);
      }
    });

    test('"." and ".." segments, empty segments and an empty path', async () => {
      for (const path of ['/v1/strict/data/a/../kept', '/v1/strict/data/a/%2E%2E/kept', '/v1/strict/data/./kept', '/v1/strict/data/a//b']) {
        const res = await rawRequest(url, 'PUT', path, { token: root, body: { data: { v: 'aliased' } } });
        expect([path, res.status]).toEqual([path, 400]);
        expect(JSON.parse(res.text)).toEqual({ errors: [expect.stringMatching(/invalid secret path/)] });
      }
      const empty = await call('PUT', 'strict/data', { data: { v: 1 } });
      expect([empty.status, empty.body.errors]).toEqual([400, ['a secret path is required']]);
      expect((await call('PUT', 'strict/data/', { data: { v: 1 } })).status).toBe(404);
      expect((await call('PUT', 'plain/', { v: 1 })).status).toBe(400);
      await expectUnchanged();
    });

    test('a body over 32 MiB is refused with 413, also on a connection the client closes after it', async () => {
      const body = Buffer.from(JSON.stringify({ data: { blob: 'x'.repeat(32 * 1024 * 1024) } }));
      for (const connection of ['keep-alive', 'close']) {
        const res = await api(url, 'PUT', '/v1/strict/data/huge', { token: root, rawBody: body, headers: { connection } });
        expect([connection, res.status]).toEqual([connection, 413]);
        expect(res.body.errors[0]).toMatch(/too large/);
      }
      expect((await metadata('strict', 'huge')).status).toBe(404);
      await expectUnchanged();
    });

    test('malformed JSON is a 400 that quotes nothing of the body', async () => {
      const res = await api(url, 'PUT', '/v1/strict/data/kept', { token: root, rawBody: `{"data":{"password":${SECRET}}}` });
      expect(res.status).toBe(400);
      expect(res.body.errors[0]).toMatch(/JSON/);
      // Not even a fragment of the value (JSON.parse's own messages quote the text around the error).
      expect(res.text).not.toContain(SECRET.slice(2, 8));
      await expectUnchanged();
    });
  });

  if (kind === 'distributed') {
    test('LIST of a directory with 100,000 keys', async () => {
      // Distributed only: the keys are written through the API, and at this machine's rates
      // (embedded storage syncs each commit to disk) only the two PostgreSQL gateways get 100,000
      // writes done in under a minute. Version 1 writes are one storage record
      // each (version 2 adds a locked transaction per write, roughly halving the rate); the version
      // 2 listing of 100,000 keys is covered at the storage level by libs/engine-kv's scale.spec.
      const keyCount = 100_000;
      const concurrency = 96;
      await mount('bulk', '1');
      const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
      const keyName = (i: number) => `key-${String(i).padStart(6, '0')}`;
      let next = 0;
      try {
        await Promise.all(
          Array.from({ length: concurrency }, async (_, worker) => {
            for (let i = next++; i < keyCount; i = next++) {
              const res = await rawRequest(urls[worker % urls.length], 'PUT', `/v1/bulk/big/${keyName(i)}`, { token: root, body: { i }, agent });
              if (res.status !== 204) throw new Error(`write ${i}: ${res.status} ${res.text}`);
            }
          }),
        );
      } finally {
        agent.destroy();
      }
      for (const at of urls) {
        const listed = await call<ListBody>('LIST', 'bulk/big/', undefined, { at });
        expect(listed.status).toBe(200);
        expect(listed.body.data.keys).toEqual(Array.from({ length: keyCount }, (_, i) => keyName(i)));
      }
      expect((await call('GET', 'bulk/big/key-054321')).body.data).toEqual({ i: 54321 });
      // About a minute on a quiet machine; the bound leaves room for a machine shared with other work.
    }, 360_000);
  }

  test('no secret value appears in any process log', () => {
    for (const process of topology.processes) expect(process.logs.filter((line) => line.includes(SECRET))).toEqual([]);
  });
});
