import { jsonBody, VERSION } from '@svc/api-contract';
import type { Metrics } from '@svc/metrics';
import { METRICS_PATH, unauthenticatedMetrics } from './metrics-endpoint';
import { jsonError, type HttpRequest, type HttpResult } from './exchange';

/** What the HTTP front needs of whatever answers requests. */
export interface HttpHandler {
  handle(req: HttpRequest): Promise<HttpResult>;
}

/** The state of an engine service that its health reports. */
export interface ServiceState {
  service: string;
  /** Holds no keyring: no gateway is unsealed, or none has handed it over yet. */
  readonly sealed: boolean;
  readonly busConnected: boolean;
}

const HEALTH_PATH = '/v1/sys/health';

/**
 * The listener of an engine service answers two things. Its health, for orchestrators' probes:
 * 200 when it can serve, `sealedcode` (503 unless given) while it holds no keyring, 503 while its
 * bus link is down (nothing could reach it). And its metrics at sys/metrics, when the listener's
 * telemetry block allows them without a token (a service has no token store to check one
 * against). Everything else is 404.
 */
export function serviceHealthHandler(state: ServiceState, metrics: Metrics): HttpHandler {
  return {
    handle: async (req) => {
      const queryStart = req.url.indexOf('?');
      const path = queryStart < 0 ? req.url : req.url.slice(0, queryStart);
      const query = new URLSearchParams(queryStart < 0 ? '' : req.url.slice(queryStart + 1));
      if (path === METRICS_PATH) return unauthenticatedMetrics(metrics, req, query);
      if (path !== HEALTH_PATH) return jsonError(404, ['unsupported path']);
      if (req.method !== 'GET' && req.method !== 'HEAD') return jsonError(405, [`method ${req.method} is not supported on ${HEALTH_PATH}`]);
      const sealed = state.sealed;
      let status = 503;
      if (state.busConnected) {
        const name = sealed ? 'sealedcode' : 'activecode';
        const given = query.get(name);
        status = given === null ? (sealed ? 503 : 200) : Number(given);
        if (!Number.isInteger(status) || status < 100 || status > 599) return jsonError(400, [`invalid status code for ${name}: "${given}"`]);
      }
      const body = {
        service: state.service,
        sealed,
        bus: state.busConnected ? 'connected' : 'disconnected',
        server_time_utc: Math.floor(Date.now() / 1000),
        version: VERSION,
      };
      return { status, body: status === 204 ? undefined : jsonBody(body) };
    },
  };
}
