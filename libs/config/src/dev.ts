import { DEFAULT_TELEMETRY } from '@svc/metrics';
import type { ServerConfig } from './types';
import { DEFAULT_ADDRESS, DEFAULT_JSON_LIMITS, defaultClusterAddress, DEFAULT_MAX_REQUEST_SIZE, DEFAULT_TIMEOUTS } from './listener';
import { DEFAULT_LEASE_TTL_SECONDS, DEFAULT_MAX_REQUEST_DURATION_MS } from './parse';
import { parseProviderEndpoints } from './provider-endpoints';

/** The all-in-one development configuration: one plain-HTTP listener, in-memory storage, bus and locks. */
export function devConfig(opts: { listenAddress?: string } = {}): ServerConfig {
  return {
    listeners: [
      {
        type: 'tcp',
        address: opts.listenAddress ?? DEFAULT_ADDRESS,
        clusterAddress: defaultClusterAddress(opts.listenAddress ?? DEFAULT_ADDRESS),
        tlsDisable: true,
        tlsMinVersion: 'tls12',
        maxRequestSize: DEFAULT_MAX_REQUEST_SIZE,
        requireRequestHeader: false,
        disableUnauthedRekeyEndpoints: false,
        disableUnauthedGenerateRootEndpoints: false,
        customResponseHeaders: {},
        unauthenticatedMetricsAccess: false,
        timeouts: DEFAULT_TIMEOUTS,
        jsonLimits: DEFAULT_JSON_LIMITS,
      },
    ],
    storage: { type: 'inmem', options: {} },
    seal: { type: 'shamir' },
    ui: true,
    logLevel: 'info',
    defaultLeaseTtl: DEFAULT_LEASE_TTL_SECONDS,
    maxLeaseTtl: DEFAULT_LEASE_TTL_SECONDS,
    maxRequestDurationMs: DEFAULT_MAX_REQUEST_DURATION_MS,
    providerEndpoints: parseProviderEndpoints(undefined, 'environment', process.env, []),
    telemetry: DEFAULT_TELEMETRY,
    warnings: [],
  };
}
