import { Readable } from 'node:stream';
import type { Response } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { Metrics } from '@svc/metrics';

/** sys/metrics in `format` (the `format` parameter; see Metrics.render) as an engine's response. */
export async function metricsResponse(metrics: Pick<Metrics, 'render'>, format: string, accept: string | undefined): Promise<Response> {
  const answer = await metrics.render(format, accept);
  if (!answer.ok) throw ServiceError.badRequest(answer.error);
  return { stream: Readable.from([answer.body]), headers: { 'content-type': answer.contentType, 'content-length': String(Buffer.byteLength(answer.body)) } };
}
