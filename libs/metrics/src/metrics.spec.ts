import { DEFAULT_TELEMETRY, Metrics, type TelemetryConfig } from './index';

function metricsWith(telemetry: Partial<TelemetryConfig> = {}): Metrics {
  return new Metrics({ ...DEFAULT_TELEMETRY, disableHostname: true, ...telemetry }, 'host-1.example');
}

async function prometheusText(metrics: Metrics): Promise<string> {
  const answer = await metrics.render('prometheus');
  if (!answer.ok) throw new Error(answer.error);
  expect(answer.contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
  return answer.body;
}

describe('Metrics', () => {
  it('shows a timer as a histogram in milliseconds with its failures beside it, one series per label values', async () => {
    const metrics = metricsWith();
    const timer = metrics.timer('core.handle_request', 'Requests', ['mount', 'operation']);
    const started = performance.now();
    timer.series('secret/', 'read').record(started, false);
    timer.series('secret/', 'read').record(started, true);
    timer.series('transit/', 'update').record(started, false);
    expect(timer.series('secret/', 'read')).toBe(timer.series('secret/', 'read'));

    const text = await prometheusText(metrics);
    expect(text).toContain('# TYPE svc_core_handle_request histogram');
    expect(text).toMatch(/^svc_core_handle_request_count\{mount="secret\/",operation="read"\} 2$/m);
    expect(text).toMatch(/^svc_core_handle_request_bucket\{mount="secret\/",operation="read",le="\+Inf"\} 2$/m);
    expect(text).toMatch(/^svc_core_handle_request_count\{mount="transit\/",operation="update"\} 1$/m);
    expect(text).toMatch(/^svc_core_handle_request_errors\{mount="secret\/",operation="read"\} 1$/m);
    expect(text).toMatch(/^svc_core_handle_request_errors\{mount="transit\/",operation="update"\} 0$/m);
  });

  it('puts an operation in the first bucket whose bound it does not exceed', async () => {
    const metrics = metricsWith();
    const series = metrics.timer('storage.operation', 'Storage', ['operation']).series('get');
    // Recorded as having started 7 ms ago: the 10 ms bucket and above count it, the 5 ms one does not.
    series.record(performance.now() - 7, false);
    const text = await prometheusText(metrics);
    expect(text).toMatch(/^svc_storage_operation_bucket\{operation="get",le="5"\} 0$/m);
    expect(text).toMatch(/^svc_storage_operation_bucket\{operation="get",le="10"\} 1$/m);
    expect(Number(/^svc_storage_operation_sum\{operation="get"\} (\S+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(7);
  });

  it('gives the same timer to every caller of a name', () => {
    const metrics = metricsWith();
    expect(metrics.timer('engine.handle_request', 'A', ['service'])).toBe(metrics.timer('engine.handle_request', 'A', ['service']));
  });

  it("answers JSON in Vault's shape: dotted names, gauges, counters and samples with their labels", async () => {
    const metrics = metricsWith();
    metrics.gauge('core.unsealed', 'Unsealed', [], (gauge) => gauge.set(1));
    metrics.counter('snapshot.failures', 'Failures', ['config']).inc({ config: 'daily' });
    metrics.timer('bus.request', 'Bus', ['service']).series('transit').record(performance.now(), false);
    const answer = await metrics.render('');
    if (!answer.ok) throw new Error(answer.error);
    expect(answer.contentType).toBe('application/json');
    const summary = JSON.parse(answer.body) as Record<string, unknown>;
    expect(summary.Timestamp).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC$/);
    expect(summary.Points).toEqual([]);
    expect(summary.Gauges).toEqual([{ Name: 'svc.core.unsealed', Value: 1, Labels: {} }]);
    expect(summary.Counters).toContainEqual({ Name: 'svc.snapshot.failures', Count: 1, Rate: expect.any(Number), Sum: 1, Mean: 1, Labels: { config: 'daily' } });
    expect(summary.Counters).toContainEqual(expect.objectContaining({ Name: 'svc.bus.request.errors', Count: 0, Labels: { service: 'transit' } }));
    expect(summary.Samples).toEqual([expect.objectContaining({ Name: 'svc.bus.request', Count: 1, Labels: { service: 'transit' } })]);
  });

  it('refuses an unknown format, and the Prometheus format when prometheus_retention_time is 0', async () => {
    expect(await metricsWith().render('xml')).toEqual({ ok: false, error: 'metric response format "xml" unknown: use "prometheus", or none for JSON' });
    expect(await metricsWith({ prometheusRetentionMs: 0 }).render('prometheus')).toEqual({
      ok: false,
      error: 'prometheus is not enabled: the telemetry stanza sets prometheus_retention_time = 0',
    });
    expect((await metricsWith({ prometheusRetentionMs: 0 }).render('')).ok).toBe(true);
  });

  it("reads a Prometheus scraper's Accept header as a request for the text format", async () => {
    const answer = await metricsWith().render('', 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5');
    expect(answer.ok && answer.contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
  });

  it('drops the series of a timer not recorded within prometheus_retention_time', async () => {
    const metrics = metricsWith({ prometheusRetentionMs: 60_000 });
    const timer = metrics.timer('core.handle_request', 'Requests', ['mount']);
    timer.series('gone/').record(performance.now(), false);
    timer.series('kept/').record(performance.now(), false);
    // The mount was last used before the retention window.
    timer.series('gone/').lastSeen = performance.now() - 120_000;
    const text = await prometheusText(metrics);
    expect(text).not.toContain('mount="gone/"');
    expect(text).toContain('mount="kept/"');
  });

  it('prefixes gauge names with the hostname unless disable_hostname, and labels every series with it given enable_hostname_label', async () => {
    const gauge = (metrics: Metrics) => metrics.gauge('core.unsealed', 'Unsealed', [], (g) => g.set(1));
    const prefixed = metricsWith({ disableHostname: false });
    gauge(prefixed);
    expect(await prometheusText(prefixed)).toMatch(/^svc_host_1_example_core_unsealed 1$/m);

    const labelled = metricsWith({ disableHostname: false, enableHostnameLabel: true });
    gauge(labelled);
    labelled.timer('bus.request', 'Bus', ['service']).series('transit').record(performance.now(), false);
    const text = await prometheusText(labelled);
    expect(text).toMatch(/^svc_core_unsealed\{host="host-1.example"\} 1$/m);
    expect(text).toMatch(/^svc_bus_request_count\{service="transit",host="host-1.example"\} 1$/m);
  });

  it('uses metrics_prefix for every name', async () => {
    const metrics = metricsWith({ metricsPrefix: 'vault' });
    metrics.gauge('core.unsealed', 'Unsealed', [], (g) => g.set(0));
    expect(await prometheusText(metrics)).toMatch(/^vault_core_unsealed 0$/m);
  });

  it('counts a usage gauge again only after usage_gauge_period, keeps its value while the count fails, and has none with "none"', async () => {
    const metrics = metricsWith({ usageGaugePeriodMs: 600_000 });
    let counts = 0;
    metrics.usageGauge('token.count', 'Tokens', async () => ++counts * 10);
    expect(await prometheusText(metrics)).toMatch(/^svc_token_count 10$/m);
    expect(await prometheusText(metrics)).toMatch(/^svc_token_count 10$/m);
    expect(counts).toBe(1);

    const failing = metricsWith();
    failing.usageGauge('token.count', 'Tokens', () => Promise.reject(new Error('sealed')));
    expect(await prometheusText(failing)).toMatch(/^svc_token_count 0$/m);

    const none = metricsWith({ usageGaugePeriodMs: 0 });
    none.usageGauge('token.count', 'Tokens', async () => 1);
    expect(await prometheusText(none)).not.toContain('token_count');
  });
});
