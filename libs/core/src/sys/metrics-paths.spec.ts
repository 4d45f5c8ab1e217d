import { Backend, type Response } from '@svc/framework';
import { DEFAULT_TELEMETRY, Metrics, type TelemetryConfig } from '@svc/metrics';
import { MountedBackend, engineRequest, mountStorage, refusal, testMount } from '@svc/testing';
import { metricsPaths } from './metrics-paths';

const PROMETHEUS_TEXT = /^text\/plain; version=0\.0\.4/;

/** sys/metrics over real metrics of `telemetry`, which counted 3 events. */
function metricsOf(telemetry: Partial<TelemetryConfig> = {}): MountedBackend {
  const metrics = new Metrics({ ...DEFAULT_TELEMETRY, disableHostname: true, ...telemetry });
  metrics.counter('test.events', 'Events of the test.').inc(3);
  const mount = testMount('system', { path: 'sys/' });
  return new MountedBackend(new Backend({ type: 'system', help: 'Metrics.', paths: metricsPaths({ metrics }) }), mount, mountStorage(mount));
}

/** The streamed body as the client receives it, with its type; the announced length must match it. */
async function received(response: Response | undefined): Promise<{ contentType: string; text: string }> {
  const chunks: Buffer[] = [];
  for await (const chunk of response!.stream!) chunks.push(Buffer.from(chunk as string));
  const text = Buffer.concat(chunks).toString('utf8');
  expect(response!.headers!['content-length']).toBe(String(Buffer.byteLength(text)));
  return { contentType: response!.headers!['content-type'], text };
}

describe('sys/metrics', () => {
  it("answers JSON in Vault's shape by default", async () => {
    const { contentType, text } = await received(await metricsOf().request('read', 'metrics'));
    expect(contentType).toBe('application/json');
    const summary = JSON.parse(text);
    expect(summary).toMatchObject({ Timestamp: expect.any(String), Gauges: [], Points: [], Samples: [] });
    expect(summary.Counters).toEqual([expect.objectContaining({ Name: 'svc.test.events', Count: 3, Sum: 3 })]);
  });

  it('answers the Prometheus text format when the format parameter asks for it', async () => {
    const { contentType, text } = await received(await metricsOf().request('read', 'metrics', { format: 'prometheus' }));
    expect(contentType).toMatch(PROMETHEUS_TEXT);
    expect(text).toMatch(/^svc_test_events 3$/m);
  });

  it("answers the Prometheus text format to a scraper's OpenMetrics Accept header", async () => {
    const metrics = metricsOf();
    const accept = 'application/openmetrics-text; version=1.0.0, application/json';
    const { contentType, text } = await received(await metrics.backend.handle({ ...engineRequest(metrics.mount, 'read', 'metrics'), accept }));
    expect(contentType).toMatch(PROMETHEUS_TEXT);
    expect(text).toMatch(/^svc_test_events 3$/m);
  });

  it('refuses an unknown format, and the Prometheus format when the telemetry stanza turns it off', async () => {
    expect(await refusal(metricsOf().request('read', 'metrics', { format: 'xml' }))).toEqual({
      status: 400,
      message: 'metric response format "xml" unknown: use "prometheus", or none for JSON',
    });
    expect(await refusal(metricsOf({ prometheusRetentionMs: 0 }).request('read', 'metrics', { format: 'prometheus' }))).toEqual({
      status: 400,
      message: 'prometheus is not enabled: the telemetry stanza sets prometheus_retention_time = 0',
    });
  });
});
