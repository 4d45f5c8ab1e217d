import { hostname } from 'node:os';
import { Counter, Gauge, Registry } from 'prom-client';
import type { TelemetryConfig } from './telemetry';
import { Timer, type Labels } from './timer';

/** Vault's JSON form of sys/metrics (go-metrics' in-memory summary). */
export interface MetricsSummary {
  Timestamp: string;
  Gauges: { Name: string; Value: number; Labels: Labels }[];
  Points: never[];
  Counters: SampledValue[];
  Samples: SampledValue[];
}

/** A counter or timer in the JSON form: its totals since the process started. */
export interface SampledValue {
  Name: string;
  Count: number;
  /** Sum per second since the process started. */
  Rate: number;
  Sum: number;
  Mean: number;
  Labels: Labels;
}

/** The answer to a request for the metrics in some format. */
export type MetricsAnswer = { ok: true; contentType: string; body: string } | { ok: false; error: string };

const PROMETHEUS_DISABLED = 'prometheus is not enabled: the telemetry stanza sets prometheus_retention_time = 0';

/**
 * The metrics of one process (prom-client registry) under the `telemetry` stanza's rules. Names are
 * given dotted, as Vault's (`core.handle_request`), and shown with the prefix: `svc_core_handle_request`
 * in the Prometheus form, `svc.core.handle_request` in the JSON form.
 */
export class Metrics {
  private readonly registry = new Registry();
  private readonly timers = new Map<string, Timer>();
  /** Dotted name (with prefix) of each Prometheus name, for the JSON form. */
  private readonly dottedNames = new Map<string, string>();
  private readonly started = performance.now();
  /** What gauge names carry after the prefix: the hostname, unless disable_hostname or enable_hostname_label. */
  private readonly gaugeHost: string;

  constructor(
    readonly config: TelemetryConfig,
    host = hostname(),
  ) {
    if (config.enableHostnameLabel) this.registry.setDefaultLabels({ host });
    this.gaugeHost = config.disableHostname || config.enableHostnameLabel ? '' : `${host}.`;
  }

  /**
   * A timer (latency in ms) and its failure counter (`NAME.errors`), labelled by `labelNames`;
   * the same timer for every caller that names it (the engine hosts of one process share theirs).
   */
  timer(name: string, help: string, labelNames: readonly string[]): Timer {
    let timer = this.timers.get(name);
    if (!timer) {
      timer = new Timer(this.register(name), this.register(`${name}.errors`), help, labelNames, this.registry);
      this.timers.set(name, timer);
    }
    return timer;
  }

  /** A counter of rare events (prom-client's own: its labels are hashed on each increment). */
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter<string> {
    return new Counter({ name: this.register(name), help, labelNames, registers: [this.registry] });
  }

  /** A gauge; `collect` sets its value when the metrics are read. */
  gauge(name: string, help: string, labelNames: readonly string[] = [], collect?: (gauge: Gauge<string>) => void | Promise<void>): Gauge<string> {
    return new Gauge({
      name: this.register(this.gaugeHost + name),
      help,
      labelNames,
      registers: [this.registry],
      ...(collect ? { collect(this: Gauge<string>) { return collect(this); } } : {}),
    });
  }

  /**
   * A usage gauge (Vault's term): a count too costly to take on every read, taken again when the
   * metrics are read at least usage_gauge_period after the last time. A count that fails (sealed)
   * leaves the last value. With usage_gauge_period = "none" there are no usage gauges.
   */
  usageGauge(name: string, help: string, count: () => Promise<number>): void {
    const period = this.config.usageGaugePeriodMs;
    if (period === 0) return;
    let countedAt = Number.NEGATIVE_INFINITY;
    this.gauge(name, help, [], async (gauge) => {
      if (performance.now() - countedAt < period) return;
      try {
        gauge.set(await count());
        countedAt = performance.now();
      } catch {
        // Nothing can be counted while sealed; the gauge keeps its last value.
      }
    });
  }

  /**
   * The metrics in `format`: "prometheus" for the text format, "" for JSON unless `accept` asks for
   * OpenMetrics text (a Prometheus scraper's Accept header), as Vault reads it; anything else is refused.
   */
  async render(requested: string, accept = ''): Promise<MetricsAnswer> {
    const format = requested === '' && accept.startsWith('application/openmetrics-text') ? 'prometheus' : requested;
    if (format === 'prometheus') {
      if (this.config.prometheusRetentionMs === 0) return { ok: false, error: PROMETHEUS_DISABLED };
      return { ok: true, contentType: this.registry.contentType, body: await this.prometheus() };
    }
    if (format === '') return { ok: true, contentType: 'application/json', body: JSON.stringify(await this.summary()) };
    return { ok: false, error: `metric response format "${format}" unknown: use "prometheus", or none for JSON` };
  }

  /** The Prometheus text format (version 0.0.4); series not recorded within prometheus_retention_time are dropped first. */
  async prometheus(): Promise<string> {
    const before = performance.now() - this.config.prometheusRetentionMs;
    for (const timer of this.timers.values()) timer.sweep(before);
    return this.registry.metrics();
  }

  /** The JSON form, in Vault's shape; values are totals since the process started. */
  async summary(): Promise<MetricsSummary> {
    const seconds = Math.max((performance.now() - this.started) / 1000, 1e-3);
    const summary: MetricsSummary = { Timestamp: goTimestamp(new Date()), Gauges: [], Points: [], Counters: [], Samples: [] };
    for (const metric of await this.registry.getMetricsAsJSON()) {
      const Name = this.dottedNames.get(metric.name) ?? metric.name;
      const type = String(metric.type);
      if (type === 'gauge') {
        for (const { value, labels } of metric.values) summary.Gauges.push({ Name, Value: value, Labels: stringLabels(labels) });
      } else if (type === 'counter') {
        for (const { value, labels } of metric.values) summary.Counters.push(sampled(Name, value, value, stringLabels(labels), seconds));
      } else if (type === 'histogram') {
        summary.Samples.push(...histogramSamples(Name, metric.name, metric.values, seconds));
      }
    }
    return summary;
  }

  /** The Prometheus name of a dotted name, remembered for the JSON form. */
  private register(name: string): string {
    const dotted = `${this.config.metricsPrefix}.${name}`;
    const prometheus = dotted.replace(/[^a-zA-Z0-9_]/g, '_');
    this.dottedNames.set(prometheus, dotted);
    return prometheus;
  }
}

function sampled(Name: string, count: number, sum: number, Labels: Labels, seconds: number): SampledValue {
  return { Name, Count: count, Rate: sum / seconds, Sum: sum, Mean: count > 0 ? sum / count : 0, Labels };
}

/** One sample per label set of a histogram, from its _sum and _count values. */
function histogramSamples(Name: string, name: string, values: { value: number; labels: Partial<Record<string, string | number>>; metricName?: string }[], seconds: number): SampledValue[] {
  const bySeries = new Map<string, { labels: Labels; sum: number; count: number }>();
  for (const { value, labels, metricName } of values) {
    if (metricName !== `${name}_sum` && metricName !== `${name}_count`) continue;
    const key = JSON.stringify(labels);
    const entry = bySeries.get(key) ?? { labels: stringLabels(labels), sum: 0, count: 0 };
    if (metricName === `${name}_sum`) entry.sum = value;
    else entry.count = value;
    bySeries.set(key, entry);
  }
  return [...bySeries.values()].map(({ labels, sum, count }) => sampled(Name, count, sum, labels, seconds));
}

function stringLabels(labels: Record<string, string | number | undefined>): Labels {
  const result: Labels = {};
  for (const [name, value] of Object.entries(labels)) if (value !== undefined) result[name] = String(value);
  return result;
}

/** Go's time.String() in UTC, as Vault's JSON carries it: "2026-11-23 19:00:00 +0000 UTC". */
function goTimestamp(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} +0000 UTC`;
}
