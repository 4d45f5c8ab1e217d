import type { PathDeclaration } from '@svc/framework';
import type { Metrics } from '@svc/metrics';
import { metricsResponse } from './metrics-response';

/** What the metrics path uses of the core: the rendering of this process's metrics. */
export interface MetricsPathsDeps {
  metrics: Pick<Metrics, 'render'>;
}

/**
 * sys/metrics: this gateway's metrics (docs/metrics.md) for a token that may read the path, as in
 * Vault; a listener can serve it without one (the edge's metrics-endpoint.ts).
 */
export function metricsPaths(core: MetricsPathsDeps): PathDeclaration[] {
  return [
    {
      pattern: 'metrics',
      synopsis: "This process's metrics: request counts and latencies, bus round trips, storage, seal state, tokens, leases, sync and snapshots.",
      fields: {
        format: { type: 'string', default: '', description: 'prometheus for the Prometheus text format; empty for JSON (Vault\'s shape).' },
      },
      operations: {
        read: {
          summary: 'Read the metrics.',
          handler: (req, fields) => metricsResponse(core.metrics, fields.get<string>('format'), req.accept),
        },
      },
    },
  ];
}
