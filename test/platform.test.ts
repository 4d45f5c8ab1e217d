/**
 * Issue 2 end to end: HTTP conventions, seal lifecycle, mounts, OpenAPI and errors, through real
 * server processes in both topologies.
 */
import { api, eventually, startTopology, validateOpenApi, type Topology, type TopologyKind } from '@svc/testing';

const CUSTOM_HEADERS_LISTENER = `listener "tcp" {
  address = "127.0.0.1:0"
  tls_disable = true
  custom_response_headers {
    "default" = { "X-Custom-Default" = ["d"], "X-Overridden" = ["default"] }
    "2xx" = { "X-Overridden" = ["class-2xx"] }
    "200" = { "X-Overridden" = ["exact-200"] }
    "4xx" = { "X-Overridden" = ["class-4xx"] }
    "307" = { "X-Redirect" = ["r1", "r2"] }
  }
}`;

describe.each<TopologyKind>(['all-in-one', 'distributed'])('platform, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let rootToken: string;
  let keys: string[];

  beforeAll(async () => {
    topology = await startTopology(kind, { listeners: [CUSTOM_HEADERS_LISTENER], gateways: kind === 'distributed' ? 2 : 1, gatewayConfig: 'ui = true\n' });
    url = topology.urls[0];
  }, 120_000);

  afterAll(() => topology?.stop());

  test('an uninitialized server answers 501 except for init, seal-status and health', async () => {
    expect((await api(url, 'GET', '/v1/sys/init')).body).toEqual({ initialized: false });
    const status = await api(url, 'GET', '/v1/sys/seal-status');
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ type: 'shamir', initialized: false, sealed: true });
    expect((await api(url, 'GET', '/v1/sys/health')).status).toBe(501);
    expect((await api(url, 'GET', '/v1/sys/health?uninitcode=299')).status).toBe(299);
    const mounts = await api(url, 'GET', '/v1/sys/mounts', { token: 'anything' });
    expect(mounts.status).toBe(501);
    expect(mounts.body).toEqual({ errors: ['Service is not initialized'] });
  });

  test('init refuses bad share settings with a 400 naming the field, writing nothing', async () => {
    const bad = await api(url, 'PUT', '/v1/sys/init', { body: { secret_shares: 2, secret_threshold: 3 } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.join(' ')).toMatch(/secret_threshold/);
    const wrongType = await api(url, 'PUT', '/v1/sys/init', { body: { secret_shares: 'many', secret_threshold: 1 } });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.errors.join(' ')).toMatch(/secret_shares/);
    expect((await api(url, 'GET', '/v1/sys/init')).body).toEqual({ initialized: false });
  });

  test('init with 3 of 5 shares, then sealed until three shares are given', async () => {
    const init = await api<{ keys: string[]; keys_base64: string[]; root_token: string }>(url, 'PUT', '/v1/sys/init', {
      body: { secret_shares: 5, secret_threshold: 3 },
    });
    expect(init.status).toBe(200);
    expect(init.body.keys).toHaveLength(5);
    expect(init.body.keys_base64).toHaveLength(5);
    ({ keys, root_token: rootToken } = init.body);

    expect((await api(url, 'PUT', '/v1/sys/init', { body: { secret_shares: 1, secret_threshold: 1 } })).status).toBe(400);
    const sealed = await api(url, 'GET', '/v1/sys/mounts', { token: rootToken });
    expect(sealed.status).toBe(503);
    expect(sealed.body).toEqual({ errors: ['Service is sealed'] });
    expect((await api(url, 'GET', '/v1/sys/health')).status).toBe(503);
    expect((await api(url, 'GET', '/v1/sys/health?sealedcode=218')).status).toBe(218);

    const first = await api(url, 'PUT', '/v1/sys/unseal', { body: { key: keys[0] } });
    expect(first.body).toMatchObject({ sealed: true, progress: 1, t: 3, n: 5 });
    const wrongType = await api(url, 'PUT', '/v1/sys/unseal', { body: { key: 42 } });
    expect(wrongType.status).toBe(400);
    const reset = await api(url, 'PUT', '/v1/sys/unseal', { body: { reset: true } });
    expect(reset.body).toMatchObject({ sealed: true, progress: 0 });
    for (const key of keys.slice(1, 4)) await api(url, 'PUT', '/v1/sys/unseal', { body: { key } });
    const status = await api(url, 'GET', '/v1/sys/seal-status');
    expect(status.body).toMatchObject({ sealed: false, initialized: true, progress: 0 });
  });

  test('health, leader and key status of an unsealed server', async () => {
    const health = await api(url, 'GET', '/v1/sys/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ initialized: true, sealed: false, standby: false });
    expect((await api(url, 'GET', '/v1/sys/health?activecode=202')).status).toBe(202);
    expect((await api(url, 'HEAD', '/v1/sys/health')).status).toBe(200);
    const leader = await api(url, 'GET', '/v1/sys/leader');
    expect(leader.body).toMatchObject({ ha_enabled: kind === 'distributed', is_self: true });
    const keyStatus = await api(url, 'GET', '/v1/sys/key-status', { token: rootToken });
    expect(keyStatus.body.data).toMatchObject({ term: 1 });
  });

  test("sys/host-info describes the answering server's host (sudo); sys/internal/counters/tokens counts service tokens", async () => {
    const info = await api<{ data: Record<string, unknown> & { cpu: unknown[]; disk: Array<Record<string, number>>; host: Record<string, unknown>; memory: Record<string, number> } }>(
      url,
      'GET',
      '/v1/sys/host-info',
      { token: rootToken },
    );
    expect(info.status).toBe(200);
    expect(info.body.data.cpu.length).toBeGreaterThan(0);
    expect(info.body.data.disk[0]).toMatchObject({ path: '/', total: expect.any(Number) });
    expect(info.body.data.host).toMatchObject({ hostname: expect.any(String), uptime: expect.any(Number), kernelVersion: expect.any(String) });
    expect(info.body.data.memory.total).toBeGreaterThan(info.body.data.memory.used);
    expect(Date.parse(String(info.body.data.timestamp))).toBeGreaterThan(Date.now() - 60_000);
    const withoutSudo = (await api<{ auth: { client_token: string } }>(url, 'POST', '/v1/auth/token/create', { token: rootToken, body: { policies: ['default'] } })).body.auth.client_token;
    expect((await api(url, 'GET', '/v1/sys/host-info', { token: withoutSudo })).status).toBe(403);

    const count = async () => (await api<{ data: { counters: { service_tokens: { total: number } } } }>(url, 'GET', '/v1/sys/internal/counters/tokens', { token: rootToken })).body.data.counters.service_tokens.total;
    const before = await count();
    for (let i = 0; i < 2; i++) await api(url, 'POST', '/v1/auth/token/create', { token: rootToken, body: { policies: ['default'] } });
    await api(url, 'POST', '/v1/auth/token/create', { token: rootToken, body: { policies: ['default'], type: 'batch' } });
    expect(await count()).toBe(before + 2);
  });

  test('tokens: missing or wrong token is 403; X-Service-Token and Bearer both work', async () => {
    expect((await api(url, 'GET', '/v1/sys/mounts')).status).toBe(403);
    const wrong = await api(url, 'GET', '/v1/sys/mounts', { token: 'svs.not-a-token' });
    expect(wrong.status).toBe(403);
    expect(wrong.body).toEqual({ errors: ['permission denied'] });
    expect((await api(url, 'GET', '/v1/sys/mounts', { headers: { authorization: `Bearer ${rootToken}` } })).status).toBe(200);
    expect((await api(url, 'GET', '/v1/sys/mounts', { headers: { authorization: 'Bearer nope' } })).status).toBe(403);
  });

  test('a fresh installation has sys/, secret/ (kv version 1) and auth/token/', async () => {
    const mounts = await api<{ data: Record<string, { type: string; options: Record<string, string> | null; uuid: string; accessor: string }> }>(
      url,
      'GET',
      '/v1/sys/mounts',
      { token: rootToken },
    );
    expect(mounts.status).toBe(200);
    expect(mounts.body).toMatchObject({ request_id: expect.any(String), lease_id: '', renewable: false, lease_duration: 0, wrap_info: null, warnings: null, auth: null });
    expect(mounts.body.data['secret/']).toMatchObject({ type: 'kv', options: { version: '1' } });
    expect(mounts.body.data['sys/']).toMatchObject({ type: 'system' });
    expect(mounts.body.data['secret/'].uuid).toMatch(/^[0-9a-f-]{36}$/);
    const auth = await api<{ data: Record<string, { type: string }> }>(url, 'GET', '/v1/sys/auth', { token: rootToken });
    expect(auth.body.data['token/']).toMatchObject({ type: 'token' });
  });

  test('mount lifecycle: enable, read, tune, remount, disable', async () => {
    const enable = await api(url, 'POST', '/v1/sys/mounts/team/kv', {
      token: rootToken,
      body: { type: 'kv', description: 'team secrets', config: { default_lease_ttl: '1h', max_lease_ttl: '2h' }, options: { version: '1' } },
    });
    expect(enable.status).toBe(204);
    expect(enable.text).toBe('');
    expect((await api(url, 'POST', '/v1/sys/mounts/team/kv', { token: rootToken, body: { type: 'kv' } })).status).toBe(400);
    expect((await api(url, 'POST', '/v1/sys/mounts/team', { token: rootToken, body: { type: 'kv' } })).status).toBe(400);
    // The mount tables accept exactly the registered types of their table, and say which those are.
    const unknown = await api(url, 'POST', '/v1/sys/mounts/other', { token: rootToken, body: { type: 'nope' } });
    expect([unknown.status, unknown.body.errors]).toEqual([400, ['unknown secrets engine type "nope"; known types: aws, cloud, database, kv, transit']]);
    const wrongTable = await api(url, 'POST', '/v1/sys/auth/other', { token: rootToken, body: { type: 'transit' } });
    expect([wrongTable.status, wrongTable.body.errors[0]]).toEqual([400, expect.stringMatching(/^unknown auth method type "transit"; known types: /)]);
    const builtin = await api(url, 'POST', '/v1/sys/mounts/other', { token: rootToken, body: { type: 'cubbyhole' } });
    expect([builtin.status, builtin.body.errors]).toEqual([400, ['secrets engine type "cubbyhole" is mounted in every namespace and cannot be enabled again']]);
    expect((await api(url, 'POST', '/v1/sys/mounts/other', { token: rootToken, body: {} })).body.errors[0]).toMatch(/type/);

    const tune = await api<{ data: Record<string, unknown> }>(url, 'GET', '/v1/sys/mounts/team/kv/tune', { token: rootToken });
    expect(tune.body.data).toMatchObject({ default_lease_ttl: 3600, max_lease_ttl: 7200, description: 'team secrets' });
    expect((await api(url, 'POST', '/v1/sys/mounts/team/kv/tune', { token: rootToken, body: { default_lease_ttl: '30m', description: 'tuned' } })).status).toBe(204);
    const tuned = await api<{ data: Record<string, unknown> }>(url, 'GET', '/v1/sys/mounts/team/kv/tune', { token: rootToken });
    expect(tuned.body.data).toMatchObject({ default_lease_ttl: 1800, description: 'tuned' });
    const badTune = await api(url, 'POST', '/v1/sys/mounts/team/kv/tune', { token: rootToken, body: { default_lease_ttl: 'soon' } });
    expect(badTune.status).toBe(400);
    expect(badTune.body.errors.join(' ')).toMatch(/default_lease_ttl/);

    // The last gateway (another replica when distributed) sees the new mount as soon as the call returned.
    const other = topology.urls[topology.urls.length - 1];
    expect((await api(other, 'PUT', '/v1/team/kv/app', { token: rootToken, body: { password: 'p1' } })).status).toBe(204);
    const moved = await api<{ data: { migration_id: string } }>(url, 'POST', '/v1/sys/remount', { token: rootToken, body: { from: 'team/kv', to: 'moved' } });
    expect(moved.status).toBe(200);
    const migration = await api<{ data: { migration_info: { status: string } } }>(url, 'GET', `/v1/sys/remount/status/${moved.body.data.migration_id}`, { token: rootToken });
    expect(migration.body.data.migration_info.status).toBe('success');
    expect((await api(url, 'GET', '/v1/team/kv/app', { token: rootToken })).status).toBe(404);
    expect((await api<{ data: unknown }>(url, 'GET', '/v1/moved/app', { token: rootToken })).body.data).toEqual({ password: 'p1' });

    expect((await api(url, 'DELETE', '/v1/sys/mounts/moved', { token: rootToken })).status).toBe(204);
    expect((await api(other, 'GET', '/v1/moved/app', { token: rootToken })).status).toBe(404);
    expect((await api(url, 'DELETE', '/v1/sys/mounts/sys', { token: rootToken })).status).toBe(400);
  });

  test('LIST works on the wire and equals GET ?list=true; an empty LIST is 404', async () => {
    for (const name of ['a', 'b', 'dir/c']) {
      await api(url, 'PUT', `/v1/secret/list-test/${name}`, { token: rootToken, body: { v: name } });
    }
    const listed = await api<{ data: { keys: string[] } }>(url, 'LIST', '/v1/secret/list-test/', { token: rootToken });
    expect(listed.status).toBe(200);
    expect(listed.body.data.keys).toEqual(['a', 'b', 'dir/']);
    const viaQuery = await api<{ data: { keys: string[] } }>(url, 'GET', '/v1/secret/list-test/?list=true', { token: rootToken });
    expect(viaQuery.body.data.keys).toEqual(['a', 'b', 'dir/']);
    // Any spelling Go's strconv.ParseBool takes, as Vault reads ?list=.
    for (const spelling of ['1', 't', 'T', 'True', 'TRUE']) {
      const spelled = await api<{ data: { keys: string[] } }>(url, 'GET', `/v1/secret/list-test?list=${spelling}`, { token: rootToken });
      expect([spelling, spelled.status, spelled.body.data?.keys]).toEqual([spelling, 200, ['a', 'b', 'dir/']]);
    }
    for (const spelling of ['0', 'False']) {
      expect((await api(url, 'GET', `/v1/secret/list-test/a?list=${spelling}`, { token: rootToken })).body.data).toEqual({ v: 'a' });
    }
    const notBool = await api(url, 'GET', '/v1/secret/list-test/?list=yes', { token: rootToken });
    expect([notBool.status, notBool.body.errors]).toEqual([400, ['query parameter "list" is not a valid boolean']]);
    const empty = await api(url, 'LIST', '/v1/secret/nothing-here/', { token: rootToken });
    expect(empty.status).toBe(404);
    expect(empty.body).toEqual({ errors: [] });
  });

  test('PUT equals POST, Content-Type is not required, and JSON comes back with a content type', async () => {
    const put = await api(url, 'PUT', '/v1/secret/put-post', { token: rootToken, rawBody: '{"k":"v1"}' });
    expect(put.status).toBe(204);
    const post = await api(url, 'POST', '/v1/secret/put-post', { token: rootToken, rawBody: '{"k":"v2"}', headers: { 'content-type': 'text/plain' } });
    expect(post.status).toBe(204);
    const read = await api<{ data: unknown }>(url, 'GET', '/v1/secret/put-post', { token: rootToken });
    expect(read.headers['content-type']).toMatch(/^application\/json/);
    expect(read.body.data).toEqual({ k: 'v2' });
  });

  test('error shapes: 400 malformed JSON, 404 unknown path and trailing period, 405 unsupported operation', async () => {
    const malformed = await api(url, 'POST', '/v1/secret/x', { token: rootToken, rawBody: '{"a":' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors[0]).toMatch(/failed to parse JSON/);
    const notObject = await api(url, 'POST', '/v1/secret/x', { token: rootToken, rawBody: '[1,2]' });
    expect(notObject.status).toBe(400);
    expect((await api(url, 'GET', '/v1/nowhere/at/all', { token: rootToken })).status).toBe(404);
    expect((await api(url, 'GET', '/v1/sys/mounts/secret./tune', { token: rootToken })).status).toBe(404);
    expect((await api(url, 'GET', '/v1/secret/ends-in-period.', { token: rootToken })).status).toBe(404);
    const notAllowed = await api(url, 'DELETE', '/v1/sys/seal-status', { token: rootToken });
    expect(notAllowed.status).toBe(405);
    expect(notAllowed.body.errors).toHaveLength(1);
    expect((await api(url, 'COPY', '/v1/sys/mounts', { token: rootToken })).status).toBe(405);
  });

  test('unknown fields produce a warning and a 200 instead of a 204', async () => {
    const res = await api<{ warnings: string[] }>(url, 'POST', '/v1/sys/mounts/warned', { token: rootToken, body: { type: 'kv', colour: 'blue' } });
    expect(res.status).toBe(200);
    expect(res.body.warnings[0]).toMatch(/colour/);
  });

  test('?help=1 returns markdown help and an OpenAPI document relative to the path; 403 without a token', async () => {
    const help = await api<{ help: string; openapi: { openapi: string; paths: Record<string, unknown> } }>(url, 'GET', '/v1/sys/mounts?help=1', { token: rootToken });
    expect(help.status).toBe(200);
    expect(help.body.help).toMatch(/secrets engine/);
    expect(help.body.openapi.openapi).toMatch(/^3\./);
    expect(Object.keys(help.body.openapi.paths)).toEqual(expect.arrayContaining(['/', '/{path}', '/{path}/tune']));
    expect((await validateOpenApi(help.body.openapi)).valid).toBe(true);
    expect((await api(url, 'GET', '/v1/sys/mounts?help=1')).status).toBe(403);
  });

  test('sys/internal/specs/openapi is a valid OpenAPI 3 document of the whole API', async () => {
    const res = await api<{ openapi: string; paths: Record<string, unknown> }>(url, 'GET', '/v1/sys/internal/specs/openapi', { token: rootToken });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.paths)).toEqual(expect.arrayContaining(['/sys/mounts', '/sys/init', '/secret/{path}']));
    const validation = await validateOpenApi(res.body);
    expect(validation.errors).toBeUndefined();
    expect(validation.valid).toBe(true);
  });

  test('custom response headers follow rules 1-4 of Document 1', async () => {
    const ok = await api(url, 'GET', '/v1/sys/mounts', { token: rootToken });
    expect(ok.headers['x-custom-default']).toBe('d');
    expect(ok.headers['x-overridden']).toBe('exact-200');
    expect(ok.headers['cache-control']).toBe('no-store');
    const noContent = await api(url, 'PUT', '/v1/secret/hdr', { token: rootToken, body: { a: 1 } });
    expect(noContent.status).toBe(204);
    expect(noContent.headers['x-overridden']).toBe('class-2xx');
    const denied = await api(url, 'GET', '/v1/sys/mounts');
    expect(denied.status).toBe(403);
    expect(denied.headers['x-overridden']).toBe('class-4xx');
    expect(denied.headers['x-custom-default']).toBe('d');
    const unknown = await api(url, 'GET', '/v1/no/such/path', { token: rootToken });
    expect(unknown.status).toBe(404);
    expect(unknown.headers['x-overridden']).toBe('default');
    expect(unknown.headers['x-custom-default']).toBe('d');
    const root = await api(url, 'GET', '/');
    expect(root.status).toBe(307);
    expect(root.headers.location).toBe('/ui/');
    expect(root.headers['x-redirect']).toBe('r1, r2');
    expect(root.headers['x-custom-default']).toBe('d');
    const ui = await api(url, 'GET', '/ui/');
    expect(ui.status).toBe(200);
    expect(ui.headers['content-type']).toMatch(/text\/html/);
    expect(ui.headers['strict-transport-security']).toBeUndefined();
  });

  test('every request is logged as one JSON line with its request id, and no secret value is logged', async () => {
    const secretValue = `s3cr3t-${Date.now()}`;
    const write = await api(url, 'PUT', '/v1/secret/logged', { token: rootToken, body: { password: secretValue } });
    expect(write.status).toBe(204);
    const read = await api<{ request_id: string }>(url, 'GET', '/v1/secret/logged', { token: rootToken });
    const gateway = topology.processes[0];
    await eventually(async () => gateway.logs.some((line) => line.includes(read.body.request_id)));
    const line = JSON.parse(gateway.logs.find((l) => l.includes(read.body.request_id))!);
    expect(line).toMatchObject({ msg: 'request', method: 'GET', path: '/v1/secret/logged', status: 200 });
    const everything = topology.processes.flatMap((p) => p.logs).join('\n');
    expect(everything).not.toContain(secretValue);
    expect(everything).not.toContain(rootToken);
  });

  test('sys/rotate adds a key term; data written before stays readable', async () => {
    await api(url, 'PUT', '/v1/secret/before-rotate', { token: rootToken, body: { v: 'old' } });
    expect((await api(url, 'POST', '/v1/sys/rotate', { token: rootToken })).status).toBe(204);
    expect((await api<{ data: { term: number } }>(url, 'GET', '/v1/sys/key-status', { token: rootToken })).body.data.term).toBe(2);
    expect((await api<{ data: unknown }>(url, 'GET', '/v1/secret/before-rotate', { token: rootToken })).body.data).toEqual({ v: 'old' });
    await api(url, 'PUT', '/v1/secret/after-rotate', { token: rootToken, body: { v: 'new' } });
    const other = topology.urls[topology.urls.length - 1];
    expect((await api<{ data: unknown }>(other, 'GET', '/v1/secret/after-rotate', { token: rootToken })).body.data).toEqual({ v: 'new' });
  });

  test('sys/seal needs a token, seals every replica, and the keys unseal again', async () => {
    expect((await api(url, 'PUT', '/v1/sys/seal')).status).toBe(403);
    expect((await api(url, 'PUT', '/v1/sys/seal', { token: rootToken })).status).toBe(204);
    for (const gateway of topology.urls) {
      await eventually(async () => (await api(gateway, 'GET', '/v1/sys/seal-status')).body.sealed === true);
      expect((await api(gateway, 'GET', '/v1/secret/after-rotate', { token: rootToken })).status).toBe(503);
    }
    for (const key of keys.slice(0, 3)) await api(url, 'PUT', '/v1/sys/unseal', { body: { key } });
    for (const gateway of topology.urls) {
      await eventually(async () => (await api(gateway, 'GET', '/v1/sys/seal-status')).body.sealed === false);
      expect((await api<{ data: unknown }>(gateway, 'GET', '/v1/secret/after-rotate', { token: rootToken })).body.data).toEqual({ v: 'new' });
    }
  });
});
