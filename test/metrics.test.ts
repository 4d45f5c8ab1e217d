/**
 * sys/metrics end to end in both topologies: the Prometheus text and Vault's JSON form, who may
 * read them, the telemetry stanza, and (distributed) an engine service's own metrics on its
 * listener.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { api, initAndUnseal, PLAIN_LISTENER, startServerProcess, startTopology, type Topology, type TopologyKind } from '@svc/testing';

/** A listener whose sys/metrics needs no token, as Vault's listener telemetry block allows. */
const OPEN_METRICS_LISTENER = 'listener "tcp" {\n  address = "127.0.0.1:0"\n  tls_disable = true\n  telemetry {\n    unauthenticated_metrics_access = true\n  }\n}\n';
const TELEMETRY = 'telemetry {\n  disable_hostname = true\n  prometheus_retention_time = "1h"\n  usage_gauge_period = "1s"\n}\n';

/** One sample of the Prometheus text format: name, labels, value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/gy;

/** Parses the text format strictly: every line is a comment (HELP or TYPE), blank, or a sample. */
function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || /^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$/.test(line)) continue;
    const match = SAMPLE_LINE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    const body = match[2] ?? '';
    for (let position = 0; position < body.length; position = LABEL.lastIndex) {
      LABEL.lastIndex = position;
      const label = LABEL.exec(body);
      if (!label) throw new Error(`malformed labels: ${line}`);
      labels[label[1]] = label[2];
    }
    const value = Number(match[3] === '+Inf' ? Infinity : match[3]);
    if (Number.isNaN(value)) throw new Error(`not a number: ${line}`);
    samples.push({ name: match[1], labels, value });
  }
  return samples;
}

/** The value of the sample named `name` whose labels include `labels` (0 when there is none). */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.find((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
  return found?.value ?? 0;
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('sys/metrics (%s)', (kind) => {
  let topology: Topology;
  let gateway: string;
  let openGateway: string;
  let root: string;

  beforeAll(async () => {
    topology = await startTopology(kind, {
      listeners: [PLAIN_LISTENER, OPEN_METRICS_LISTENER],
      gatewayConfig: TELEMETRY,
      services: ['transit'],
      serviceListeners: OPEN_METRICS_LISTENER,
      serviceConfig: TELEMETRY,
    });
    const gatewayProcess = topology.processes[0];
    gateway = `http://${gatewayProcess.addresses[0]}`;
    openGateway = `http://${gatewayProcess.addresses[1]}`;
    ({ rootToken: root } = await initAndUnseal(gateway));
  }, 120_000);

  afterAll(() => topology?.stop());

  const call = (method: string, where: string, body?: unknown) => api(gateway, method, `/v1/${where}`, { token: root, body });
  const tokenWith = async (policies: string[]) =>
    (await api<{ auth: { client_token: string } }>(gateway, 'POST', '/v1/auth/token/create', { token: root, body: { policies } })).body.auth.client_token;
  const prometheus = async (token = root) => {
    const response = await api(gateway, 'GET', '/v1/sys/metrics?format=prometheus', { token });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    return parsePrometheus(response.text);
  };

  test('the request counter of a mount moves with its KV and transit requests, in the Prometheus text format', async () => {
    expect((await call('POST', 'sys/mounts/kvmetrics', { type: 'kv' })).status).toBe(204);
    expect((await call('POST', 'sys/mounts/transit', { type: 'transit' })).status).toBe(204);
    expect((await call('POST', 'transit/keys/orders')).status).toBeLessThan(300);
    const before = await prometheus();
    const kvWrites = { namespace: '', mount: 'kvmetrics/', operation: 'update' };
    const kvReads = { namespace: '', mount: 'kvmetrics/', operation: 'read' };
    const encrypts = { namespace: '', mount: 'transit/', operation: 'update' };

    for (let i = 0; i < 3; i++) expect((await call('PUT', 'kvmetrics/app', { password: `p${i}` })).status).toBe(204);
    expect((await call('GET', 'kvmetrics/app')).status).toBe(200);
    expect((await call('GET', 'kvmetrics/missing')).status).toBe(404);
    for (let i = 0; i < 2; i++) expect((await call('POST', 'transit/encrypt/orders', { plaintext: Buffer.from('order').toString('base64') })).status).toBe(200);

    const after = await prometheus();
    expect(valueOf(after, 'svc_core_handle_request_count', kvWrites) - valueOf(before, 'svc_core_handle_request_count', kvWrites)).toBe(3);
    expect(valueOf(after, 'svc_core_handle_request_count', kvReads) - valueOf(before, 'svc_core_handle_request_count', kvReads)).toBe(2);
    expect(valueOf(after, 'svc_core_handle_request_count', encrypts) - valueOf(before, 'svc_core_handle_request_count', encrypts)).toBe(2);
    expect(valueOf(after, 'svc_core_handle_request_bucket', { ...kvWrites, le: '+Inf' })).toBe(valueOf(after, 'svc_core_handle_request_count', kvWrites));
    // Transit runs in the transit engine service (in process all-in-one): its host counts what it served.
    const served = { service: 'transit', mount: 'transit/', operation: 'update' };
    expect(valueOf(after, 'svc_engine_handle_request_count', served) - valueOf(before, 'svc_engine_handle_request_count', served)).toBe(kind === 'all-in-one' ? 2 : 0);
    if (kind === 'distributed') {
      expect(valueOf(after, 'svc_bus_request_count', { service: 'transit' }) - valueOf(before, 'svc_bus_request_count', { service: 'transit' })).toBe(2);
    }

    expect(valueOf(after, 'svc_core_unsealed')).toBe(1);
    expect(after.some((sample) => sample.name === 'svc_token_count')).toBe(true);
    expect(after.some((sample) => sample.name === 'svc_expire_num_leases')).toBe(true);
    const storage = kind === 'all-in-one' ? 'embedded' : 'postgresql';
    expect(valueOf(after, 'svc_storage_operation_count', { backend: storage, operation: 'put' })).toBeGreaterThan(valueOf(before, 'svc_storage_operation_count', { backend: storage, operation: 'put' }));
    // disable_hostname: the gauges' names carry no hostname.
    expect(after.every((sample) => !sample.name.includes('_unsealed') || sample.name === 'svc_core_unsealed')).toBe(true);
  });

  test("answers JSON in Vault's shape by default", async () => {
    const response = await api<{ Timestamp: string; Gauges: { Name: string; Value: number }[]; Counters: unknown[]; Samples: { Name: string; Count: number; Labels: Record<string, string> }[] }>(
      gateway,
      'GET',
      '/v1/sys/metrics',
      { token: root },
    );
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.body.Gauges).toContainEqual({ Name: 'svc.core.unsealed', Value: 1, Labels: {} });
    const kvWrites = response.body.Samples.find((sample) => sample.Name === 'svc.core.handle_request' && sample.Labels.mount === 'kvmetrics/' && sample.Labels.operation === 'update');
    expect(kvWrites?.Count).toBe(3);
    expect((await api(gateway, 'GET', '/v1/sys/metrics?format=xml', { token: root })).body).toEqual({
      errors: ['metric response format "xml" unknown: use "prometheus", or none for JSON'],
    });
  });

  test('403 without a token or with one that may not read sys/metrics; a policy granting read lets it in', async () => {
    expect((await api(gateway, 'GET', '/v1/sys/metrics?format=prometheus')).status).toBe(403);
    expect((await api(gateway, 'GET', '/v1/sys/metrics', { token: await tokenWith(['default']) })).status).toBe(403);
    expect((await call('PUT', 'sys/policies/acl/scraper', { policy: 'path "sys/metrics" { capabilities = ["read"] }' })).status).toBe(204);
    expect(valueOf(await prometheus(await tokenWith(['scraper'])), 'svc_core_unsealed')).toBe(1);
  });

  test('a listener with unauthenticated_metrics_access serves it without a token, Accept asking for the text format', async () => {
    const open = await api(openGateway, 'GET', '/v1/sys/metrics?format=prometheus');
    expect(open.status).toBe(200);
    expect(valueOf(parsePrometheus(open.text), 'svc_core_unsealed')).toBe(1);
    const scraped = await api(openGateway, 'GET', '/v1/sys/metrics', { headers: { accept: 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5' } });
    expect(scraped.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect((await api(openGateway, 'GET', '/v1/sys/metrics')).body).toMatchObject({ Gauges: expect.any(Array) });
  });

  if (kind === 'distributed') {
    test("an engine service's listener shows the transit requests it handled", async () => {
      const transit = `http://${topology.processes.find((p) => p.name === 'transit')!.addresses[0]}`;
      const served = { service: 'transit', namespace: '', mount: 'transit/', operation: 'update' };
      const before = valueOf(parsePrometheus((await api(transit, 'GET', '/v1/sys/metrics?format=prometheus')).text), 'svc_engine_handle_request_count', served);
      for (let i = 0; i < 4; i++) expect((await call('POST', 'transit/encrypt/orders', { plaintext: 'b3JkZXI=' })).status).toBe(200);
      const response = await api(transit, 'GET', '/v1/sys/metrics?format=prometheus');
      expect(response.status).toBe(200);
      const samples = parsePrometheus(response.text);
      expect(valueOf(samples, 'svc_engine_handle_request_count', served) - before).toBe(4);
      expect(valueOf(samples, 'svc_storage_operation_count', { backend: 'postgresql', operation: 'get' })).toBeGreaterThan(0);
    });
  }
});

describe('the telemetry stanza', () => {
  let topology: Topology;

  afterEach(() => topology?.stop());

  test('prometheus_retention_time = 0 turns the Prometheus format off (400); metrics_prefix renames; hostname label', async () => {
    topology = await startTopology('all-in-one', {
      listeners: [OPEN_METRICS_LISTENER],
      gatewayConfig: 'telemetry {\n  prometheus_retention_time = 0\n  metrics_prefix = "vault"\n  enable_hostname_label = true\n}\n',
    });
    const url = topology.urls[0];
    const refused = await api(url, 'GET', '/v1/sys/metrics?format=prometheus');
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ errors: ['prometheus is not enabled: the telemetry stanza sets prometheus_retention_time = 0'] });
    // Uninitialized, the open listener still answers: a scraper sees the seal state.
    const json = await api<{ Gauges: { Name: string; Value: number; Labels: Record<string, string> }[] }>(url, 'GET', '/v1/sys/metrics');
    expect(json.status).toBe(200);
    expect(json.body.Gauges).toContainEqual({ Name: 'vault.core.unsealed', Value: 0, Labels: { host: expect.any(String) } });
  });

  test('a bad value stops the server at start with an error naming the field', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-telemetry-'));
    const file = path.join(dir, 'config.hcl');
    writeFileSync(file, `${PLAIN_LISTENER}storage "inmem" {}\ntelemetry {\n  usage_gauge_period = "sometimes"\n}\n`);
    try {
      await expect(startServerProcess('bad-telemetry', [`-config=${file}`], 60_000)).rejects.toThrow(/telemetry: usage_gauge_period must be a duration/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
