export { DEFAULT_TELEMETRY, type TelemetryConfig } from './telemetry';
export { Metrics, type MetricsAnswer, type MetricsSummary, type SampledValue } from './metrics';
export { LATENCY_BUCKETS_MS, Timer, TimerSeries, type Labels } from './timer';
export type { Counter, Gauge } from 'prom-client';
