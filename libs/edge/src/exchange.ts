import type { Readable } from 'node:stream';
import type { JsonLimits } from '@svc/config';
import { jsonBody, type JsonBody } from '@svc/api-contract';

/** An HTTP request and answer as the edge's parts exchange them, apart from Node's own types. */

export interface HttpRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer | undefined;
  /** The body of an upload path (`isUploadRequest`), left unread for its handler to stream; `body` is undefined then. */
  bodyStream?: Readable;
  remoteAddress?: string;
  requireRequestHeader: boolean;
  /** The listener's limits on a JSON body. */
  jsonLimits: JsonLimits;
  /** Unauthenticated seal operations the listener refuses (disable_unauthed_*_endpoints). */
  refusedUnauthed?: { rekey: boolean; generateRoot: boolean };
  /** The listener serves sys/metrics without a token (its telemetry block's unauthenticated_metrics_access). */
  unauthenticatedMetrics?: boolean;
}

export interface HttpResult {
  status: number;
  body?: JsonBody;
  /** A body streamed to the client instead of `body` (a snapshot download); its headers say its type and length. */
  stream?: Readable;
  contentType?: string;
  headers?: Record<string, string>;
  /** Unknown-path answers carry only the `default` custom headers (Document 1, rule 3). */
  defaultsOnly?: boolean;
}

/**
 * Paths whose request body is a file, not JSON: the HTTP layer hands it to the handler as a stream
 * and the listener's max_request_size does not apply (a snapshot is as large as the storage).
 */
const UPLOAD_PATHS = new Set(['/v1/sys/storage/raft/snapshot', '/v1/sys/storage/raft/snapshot-force']);

export function isUploadRequest(method: string | undefined, url: string | undefined): boolean {
  if (method !== 'POST' && method !== 'PUT') return false;
  const queryStart = url?.indexOf('?') ?? -1;
  return UPLOAD_PATHS.has(queryStart < 0 ? (url ?? '') : url!.slice(0, queryStart));
}

export function json(status: number, value: unknown, headers?: Record<string, string>): HttpResult {
  return { status, body: jsonBody(value), contentType: 'application/json', headers };
}

/** The API's error answer, `{"errors": [...]}`, for every status ≥ 400. */
export function jsonError(status: number, errors: string[]): HttpResult {
  return json(status, { errors });
}
