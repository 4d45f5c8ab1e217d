/** The `telemetry` stanza as the server uses it (Vault's fields that apply to a pull-only server). */
export interface TelemetryConfig {
  /** How long a series that stopped changing stays in the output, in ms; 0 turns the Prometheus format off. */
  prometheusRetentionMs: number;
  /** Leave the hostname out of gauge names (Vault puts it in front of them unless this is set). */
  disableHostname: boolean;
  /** Put the hostname in a `host` label of every series instead. */
  enableHostnameLabel: boolean;
  /** How long a usage gauge (an expensive count, such as the tokens) is kept before it is counted again, in ms; 0 = no usage gauges. */
  usageGaugePeriodMs: number;
  /** What every metric name starts with. */
  metricsPrefix: string;
}

/** Vault's defaults, with this project's prefix. */
export const DEFAULT_TELEMETRY: TelemetryConfig = {
  prometheusRetentionMs: 24 * 3600_000,
  disableHostname: false,
  enableHostnameLabel: false,
  usageGaugePeriodMs: 10 * 60_000,
  metricsPrefix: 'svc',
};
