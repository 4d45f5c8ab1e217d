import { DEFAULT_TELEMETRY, type TelemetryConfig } from '@svc/metrics';
import { objectsOf } from './blocks';
import { ConfigError } from './errors';
import { Section } from './section';

/** Prometheus metric names: letters, digits and underscores, not starting with a digit. */
const METRIC_PREFIX = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * `telemetry { ... }`: what Vault's stanza sets that applies to a server scraped for its metrics
 * (sys/metrics); the push sinks (statsd, statsite, circonus, dogstatsd, stackdriver) are not
 * offered, so their fields are warned about as unknown.
 */
export function parseTelemetry(value: unknown, sourceName: string, warnings: string[]): TelemetryConfig {
  const blocks = value === undefined ? [{}] : objectsOf(value);
  if (!blocks || blocks.length !== 1) throw new ConfigError(`${sourceName}: telemetry must be one block such as telemetry { prometheus_retention_time = "24h" }`);
  const section = new Section(`${sourceName}: telemetry`, blocks[0]);
  const metricsPrefix = section.string('metrics_prefix') ?? DEFAULT_TELEMETRY.metricsPrefix;
  if (!METRIC_PREFIX.test(metricsPrefix)) throw section.error('metrics_prefix must be letters, digits and underscores, not starting with a digit');
  const telemetry: TelemetryConfig = {
    prometheusRetentionMs: section.durationMs('prometheus_retention_time') ?? DEFAULT_TELEMETRY.prometheusRetentionMs,
    disableHostname: section.bool('disable_hostname', DEFAULT_TELEMETRY.disableHostname),
    enableHostnameLabel: section.bool('enable_hostname_label', DEFAULT_TELEMETRY.enableHostnameLabel),
    usageGaugePeriodMs: usageGaugePeriod(section),
    metricsPrefix,
  };
  section.warnUnknown(warnings);
  return telemetry;
}

/** A duration, or "none" (Vault's word) for no usage gauges at all. */
function usageGaugePeriod(section: Section): number {
  const value = section.raw('usage_gauge_period');
  if (typeof value === 'string' && value.trim().toLowerCase() === 'none') return 0;
  const ms = section.durationMs('usage_gauge_period') ?? DEFAULT_TELEMETRY.usageGaugePeriodMs;
  if (ms === 0) throw section.error('usage_gauge_period must be a positive duration such as "10m", or "none"');
  return ms;
}

/**
 * A listener's `telemetry { unauthenticated_metrics_access = true }` block, as Vault places it:
 * whether sys/metrics answers on that listener without a token.
 */
export function parseListenerTelemetry(listener: Section, warnings: string[]): boolean {
  const value = listener.raw('telemetry');
  if (value === undefined) return false;
  const blocks = objectsOf(value);
  if (!blocks || blocks.length !== 1) throw listener.error('telemetry must be one block such as telemetry { unauthenticated_metrics_access = true }');
  const section = new Section(`${listener.where}: telemetry`, blocks[0]);
  const allowed = section.bool('unauthenticated_metrics_access', false);
  section.warnUnknown(warnings);
  return allowed;
}
