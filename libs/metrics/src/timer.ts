import { Counter, Histogram, type Registry } from 'prom-client';

export type Labels = Record<string, string>;

/** Latency buckets in milliseconds, the unit of Vault's timers. */
export const LATENCY_BUCKETS_MS: readonly number[] = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000];

/**
 * One labelled series of a timer: how many operations took how long, and how many failed. Its
 * counts are plain numbers, so recording allocates nothing; they become prom-client values only
 * when the metrics are read.
 */
export class TimerSeries {
  /** Operations per bucket of LATENCY_BUCKETS_MS (not cumulative); the last slot counts those above every bound. */
  readonly buckets = new Float64Array(LATENCY_BUCKETS_MS.length + 1);
  count = 0;
  sumMs = 0;
  failures = 0;
  /** performance.now() of the last record, for prometheus_retention_time. */
  lastSeen = performance.now();

  constructor(readonly labels: Labels) {}

  /** An operation that started at `startedMs` (performance.now()) ended now. */
  record(startedMs: number, failed: boolean): void {
    const now = performance.now();
    const ms = now - startedMs;
    let bucket = 0;
    while (bucket < LATENCY_BUCKETS_MS.length && ms > LATENCY_BUCKETS_MS[bucket]) bucket++;
    this.buckets[bucket]++;
    this.count++;
    this.sumMs += ms;
    if (failed) this.failures++;
    this.lastSeen = now;
  }
}

type Level = Map<string, Level | TimerSeries>;

/**
 * A timer in Vault's sense (latency of an operation, in ms) with a counter of its failures beside
 * it, labelled by up to four label values whose series are made once: `series(a, b, c, d)` finds
 * one by four map lookups on the values themselves, with no label object or hash string built per
 * operation as prom-client's `labels()` would.
 */
export class Timer {
  private readonly root: Level = new Map();

  constructor(
    name: string,
    failuresName: string,
    help: string,
    private readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    if (labelNames.length > 4) throw new Error(`timer ${name}: at most four labels`);
    const histogramValues = () => this.histogramValues(name);
    const failureValues = () => this.failureValues();
    const histogramHelp = `${help} (milliseconds)`;
    new (class extends Histogram<string> {
      override async get(): ReturnType<Histogram<string>['get']> {
        // What prom-client's own get() answers at run time: `type` is the string it formats (its
        // typings say an enum) and there is no `collect` member (its typings require one).
        const values = histogramValues();
        return { name, help: histogramHelp, type: 'histogram', values, aggregator: 'sum' } as unknown as Awaited<ReturnType<Histogram<string>['get']>>;
      }

      /** What the registry formats (prom-client prefers it to `get`, which calls it in the base class). */
      getForPromString() {
        return this.get();
      }
    })({ name, help: histogramHelp, labelNames, buckets: [...LATENCY_BUCKETS_MS], registers: [registry] });
    new (class extends Counter<string> {
      override async get() {
        return { ...(await super.get()), values: failureValues() };
      }
    })({ name: failuresName, help: `${help}: failures`, labelNames, registers: [registry] });
  }

  /** The series of these label values, in the order of the label names (made on first use; '' past the last label). */
  series(a: string, b = '', c = '', d = ''): TimerSeries {
    const last = level(level(level(this.root, a), b), c);
    let series = last.get(d) as TimerSeries | undefined;
    if (!series) {
      const values = [a, b, c, d];
      series = new TimerSeries(Object.fromEntries(this.labelNames.map((label, index) => [label, values[index]])));
      last.set(d, series);
    }
    return series;
  }

  /** Drops the series not recorded since `before` (performance.now()). */
  sweep(before: number): void {
    sweepLevel(this.root, before);
  }

  private *all(level: Level = this.root): Iterable<TimerSeries> {
    for (const child of level.values()) {
      if (child instanceof TimerSeries) yield child;
      else yield* this.all(child);
    }
  }

  private histogramValues(name: string): { labels: Labels; value: number; metricName: string }[] {
    const values = [];
    for (const series of this.all()) {
      let cumulative = 0;
      for (const [index, bound] of LATENCY_BUCKETS_MS.entries()) {
        cumulative += series.buckets[index];
        values.push({ labels: { ...series.labels, le: String(bound) }, value: cumulative, metricName: `${name}_bucket` });
      }
      values.push({ labels: { ...series.labels, le: '+Inf' }, value: series.count, metricName: `${name}_bucket` });
      values.push({ labels: series.labels, value: series.sumMs, metricName: `${name}_sum` });
      values.push({ labels: series.labels, value: series.count, metricName: `${name}_count` });
    }
    return values;
  }

  private failureValues(): { labels: Labels; value: number }[] {
    return [...this.all()].map((series) => ({ labels: series.labels, value: series.failures }));
  }
}

function level(parent: Level, key: string): Level {
  let child = parent.get(key) as Level | undefined;
  if (!child) {
    child = new Map();
    parent.set(key, child);
  }
  return child;
}

/** Removes the series older than `before` and the levels left empty; answers whether `parent` is empty. */
function sweepLevel(parent: Level, before: number): boolean {
  for (const [key, child] of parent) {
    if (child instanceof TimerSeries ? child.lastSeen < before : sweepLevel(child, before)) parent.delete(key);
  }
  return parent.size === 0;
}
