import type { Metrics } from '@svc/metrics';
import { header } from './request-parsing';
import { jsonError, type HttpRequest, type HttpResult } from './exchange';

export const METRICS_PATH = '/v1/sys/metrics';

/**
 * sys/metrics answered by a listener itself, without a token (its `telemetry` block's
 * unauthenticated_metrics_access; Vault serves it so, outside the request path); 403 when the
 * listener does not allow it.
 */
export async function unauthenticatedMetrics(metrics: Metrics, req: HttpRequest, query: URLSearchParams): Promise<HttpResult> {
  if (!req.unauthenticatedMetrics) {
    return jsonError(403, ['permission denied: this listener serves sys/metrics only with telemetry { unauthenticated_metrics_access = true }']);
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') return jsonError(405, [`method ${req.method} is not supported on ${METRICS_PATH}`]);
  const answer = await metrics.render(query.get('format') ?? '', header(req, 'accept'));
  if (!answer.ok) return jsonError(400, [answer.error]);
  return { status: 200, body: answer.body, contentType: answer.contentType };
}
