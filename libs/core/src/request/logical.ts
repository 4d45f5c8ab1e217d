import type { Readable } from 'node:stream';
import type { Operation, Response } from '@svc/framework';
import { envelope, JsonText, type OutgoingEnvelope, type WrapInfo } from '@svc/api-contract';

/**
 * A request as the core takes it, whatever transport brought it: the HTTP layer builds one from
 * each HTTP request (`http/pipeline.ts`), the request handler serves it.
 */
export interface LogicalRequest {
  id: string;
  operation: Operation;
  /** The full path: the namespace header joined with the request path. */
  path: string;
  data: Record<string, unknown>;
  /** The client token's value, if the request carried one. */
  token?: string;
  /** Seconds the answer is to be wrapped for (`X-Service-Wrap-TTL`). */
  wrapTtl?: number;
  remoteAddress?: string;
  /** The media types the client accepts (sys/metrics answers in one of them). */
  accept?: string;
  contentType?: string;
  /** The unparsed body of an upload path (see http/pipeline.ts), handed to gateway engines only. */
  body?: Readable;
}

export interface Lease {
  leaseId: string;
  ttl: number;
}

/** What the core answers a logical request with; failures are thrown as `ServiceError`s. */
export type LogicalResult =
  /** An engine's answer (none at all for a write that returns nothing), with the lease made for its secret. */
  | { type: 'response'; response: Response | undefined; lease?: Lease }
  /** The answer was stored in a single-use token's cubbyhole. */
  | { type: 'wrapped'; wrapInfo: WrapInfo }
  | { type: 'help'; help: { help: string; openapi: unknown } };

/** The API's envelope of an engine's answer: what the client reads, and what a wrapping token holds. */
export function responseEnvelope(requestId: string, response: Response, lease?: Lease): OutgoingEnvelope {
  return envelope(requestId, {
    data: response.dataJson === undefined ? (response.data ?? null) : new JsonText(response.dataJson),
    warnings: response.warnings,
    auth: response.token?.auth ?? null,
    lease_id: lease?.leaseId ?? '',
    lease_duration: lease?.ttl ?? 0,
    renewable: lease ? (response.secret?.renewable ?? false) : false,
  });
}
